# syntax=docker/dockerfile:1
#
# washline image: the official Airflow image of the pinned version, plus Java 17
# (Spark's JVM), the pinned Python lock (requirements.txt) and the project.
#
# One image serves every container of docker-compose.yaml: the Airflow services
# (api-server, scheduler, dag-processor, triggerer) and the Spark standalone
# master and workers (pyspark ships Spark: `spark-class ...Master` / `...Worker`).
# Driver and executors therefore share one Python and one set of library
# versions, which Spark needs for pandas UDFs and pickled closures.
#
#   docker compose build                      # or: docker build -t washline:0.1.0 .
#   docker build --build-arg JAVA_FROM=temurin -t washline:0.1.0 .
#
# AIRFLOW_IMAGE must carry the same Airflow version as the `apache-airflow==`
# pin in requirements.txt (tests/unit/test_compose.py checks it, and the pip
# step below refuses a mismatch because it pins both).
ARG AIRFLOW_IMAGE=apache/airflow:3.3.2-python3.11
# Where Java 17 comes from: "debian" (openjdk-17-jre-headless from the base
# image's Debian release; the default) or "temurin" (Eclipse Temurin 17 JRE,
# for a base release whose archive no longer carries OpenJDK 17).
ARG JAVA_FROM=debian

# --- Java 17, from Debian -------------------------------------------------
# /usr/share/man/man1 must exist for the JRE's postinst (slim images lack it);
# /usr/lib/jvm/java-17 is a stable JAVA_HOME on every architecture.
FROM ${AIRFLOW_IMAGE} AS java-debian
USER root
RUN set -eux; \
    apt-get update; \
    if ! apt-cache show openjdk-17-jre-headless >/dev/null 2>&1; then \
      echo "openjdk-17-jre-headless is not in this Debian release ($(cat /etc/debian_version));" \
           "rebuild with --build-arg JAVA_FROM=temurin" >&2; \
      exit 1; \
    fi; \
    mkdir -p /usr/share/man/man1; \
    apt-get install -y --no-install-recommends openjdk-17-jre-headless; \
    ln -sfn "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/java-17; \
    apt-get autoremove -yqq --purge; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/*

# --- Java 17, from Eclipse Temurin (fallback) ------------------------------
FROM eclipse-temurin:17-jre AS temurin-jre
FROM ${AIRFLOW_IMAGE} AS java-temurin
USER root
COPY --from=temurin-jre /opt/java/openjdk /usr/lib/jvm/java-17

# --- washline --------------------------------------------------------------
FROM java-${JAVA_FROM} AS washline
USER root
ENV JAVA_HOME=/usr/lib/jvm/java-17
ENV PATH="${JAVA_HOME}/bin:${PATH}"
# /opt/washline is the project root (REPO_ROOT in washline.paths): dags/,
# src/, plugins/, spark_jobs/, include/, sql/ and the data root data/. Group 0 owns
# it and may write, so the image also runs under an arbitrary AIRFLOW_UID.
RUN set -eux; \
    java -version; \
    mkdir -p /opt/washline/data/landing /opt/washline/data/lake /opt/washline/data/staging; \
    chown -R airflow:0 /opt/washline; \
    chmod -R g+rwX /opt/washline
USER airflow

# Pinned dependencies first (cached until requirements.txt changes). Naming
# apache-airflow==${AIRFLOW_VERSION} (set by the base image) next to the lock
# keeps pip from moving Airflow and fails the build if the lock pins another.
# No _PIP_ADDITIONAL_REQUIREMENTS: nothing is installed at container start.
COPY --chown=airflow:0 requirements.txt /opt/washline/requirements.txt
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" -r /opt/washline/requirements.txt

# The project. It is installed editable (`-e`) on purpose: washline.paths finds
# sql/, include/ and spark_jobs/ relative to its own source file, so the
# package must stay in /opt/washline rather than be copied to site-packages.
# docker-compose.yaml mounts ./dags over /opt/washline/dags for development;
# src/ and spark_jobs/ can be mounted the same way (docs/deploy.md).
WORKDIR /opt/washline
COPY --chown=airflow:0 pyproject.toml README.md ./
COPY --chown=airflow:0 dags ./dags
COPY --chown=airflow:0 src ./src
COPY --chown=airflow:0 plugins ./plugins
COPY --chown=airflow:0 spark_jobs ./spark_jobs
COPY --chown=airflow:0 include ./include
COPY --chown=airflow:0 sql ./sql
RUN pip install --no-cache-dir --no-deps -e . \
 && python -c "import washline.paths, hdwm, pyspark, airflow; print('washline', washline.paths.REPO_ROOT, 'airflow', airflow.__version__, 'pyspark', pyspark.__version__)"

ENV WASHLINE_DATA=/opt/washline/data \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/washline/dags \
    AIRFLOW__CORE__PLUGINS_FOLDER=/opt/washline/plugins \
    AIRFLOW__CORE__LOAD_EXAMPLES=False \
    SPARK_LOCAL_DIRS=/tmp/spark-local \
    SPARK_WORKER_DIR=/tmp/spark-work
