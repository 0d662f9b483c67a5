"""Structural tests of the docker-compose stack, the image and the committed
configuration (no Docker engine needed).

What they hold the files to:
- ``docker-compose.yaml`` parses; every service the DAGs need exists with a
  health check; Airflow runs LocalExecutor with a low parallelism and the
  execution API URL pointing at the api-server; Spark has a master and two
  workers on the washline image.
- Every Airflow connection a DAG names (read from ``dags/*.py``) plus the
  three target-database connections is defined as ``AIRFLOW_CONN_*`` in
  ``.env.example``, parses as an Airflow connection, points at a compose
  service, and is passed into every Airflow service.
- The image pins match ``requirements.txt``: the Airflow version in the
  Dockerfile's ``FROM`` equals the ``apache-airflow==`` pin, and the
  Dockerfile installs ``requirements.txt`` (not ``_PIP_ADDITIONAL_REQUIREMENTS``).
- No plaintext password is committed outside ``.env.example``; compose only
  references ``${VAR}``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from dotenv import dotenv_values

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"
REQUIREMENTS = ROOT / "requirements.txt"

AIRFLOW_SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
SPARK_WORKERS = ("spark-worker-1", "spark-worker-2")
#: services a nightly run needs, each must have a health check
NEEDED_SERVICES = (
    "postgres", *AIRFLOW_SERVICES, "spark-master", *SPARK_WORKERS, "staging-postgres", "sqlserver", "oracle",
)
#: target-database connections users pick with the trigger conf, and the service each must reach
TARGET_CONNECTIONS = {
    "washline_staging": ("postgres", "staging-postgres"),
    "washline_staging_postgres": ("postgres", "staging-postgres"),
    "washline_staging_mssql": ("mssql", "sqlserver"),
    "washline_staging_oracle": ("oracle", "oracle"),
}
# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?message}, ${VAR?message}; $$ escapes a dollar
VAR_REF = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


# ------------------------------------------------------------------ helpers
def load_compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def env_example() -> dict[str, str]:
    """``.env.example`` parsed with python-dotenv (quotes handled like compose)."""
    values = dotenv_values(ENV_EXAMPLE)
    return {k: (v or "") for k, v in values.items()}


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose-style interpolation of ``text`` with ``env``.

    Raises:
        KeyError: a ``${VAR:?msg}``/``${VAR?msg}`` variable is not in ``env``.
    """

    def repl(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        value = env.get(name)
        if op in (":?", "?") and (value is None or (op == ":?" and value == "")):
            raise KeyError(f"required variable {name} missing: {arg}")
        if op in (":-",) and not value:
            return arg
        if op == "-" and value is None:
            return arg
        return value if value is not None else ""

    return VAR_REF.sub(repl, text).replace("$$", "$")


def resolved_compose() -> dict:
    """The compose file with ``.env.example`` substituted into its string
    values (compose interpolates after parsing, so JSON values stay intact)."""
    env = env_example()

    def walk(node):
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return interpolate(node, env) if isinstance(node, str) else node

    return walk(load_compose())


def service_env(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def mount_target(volume) -> str:
    """Container path of a short-syntax volume (``src:dst[:mode]``), with
    ``${VAR:-default}`` sources resolved to their defaults first."""
    return interpolate(str(volume), {}).split(":")[1]


def mount_source(volume) -> str:
    return interpolate(str(volume), {}).split(":")[0]


def compose_strings(node=...) -> list[str]:
    """Every string value in the parsed compose file (comments excluded)."""
    node = load_compose() if node is ... else node
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in [str(k), *compose_strings(v)]]
    if isinstance(node, list):
        return [s for v in node for s in compose_strings(v)]
    return [node] if isinstance(node, str) else []


def code_lines(path: Path) -> str:
    """``path`` without its comment lines."""
    return "\n".join(l for l in path.read_text().splitlines() if not l.lstrip().startswith("#"))


def command_words(service: dict) -> list[str]:
    cmd = service.get("command") or []
    return cmd.split() if isinstance(cmd, str) else [str(c) for c in cmd]


def conn_env_name(conn_id: str) -> str:
    return "AIRFLOW_CONN_" + conn_id.upper()


def dag_connection_ids() -> set[str]:
    """Connection ids the DAG files name: string values of ``conn_id`` /
    ``*_conn_id`` keyword arguments and the defaults of ``*conn_id`` Params."""
    ids: set[str] = set()
    for path in sorted((ROOT / "dags").glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg and node.arg.endswith("conn_id"):
                if (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                        and "{{" not in node.value.value):  # templated ids come from the Params below
                    ids.add(node.value.value)
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (
                        isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.endswith("conn_id")
                        and isinstance(value, ast.Call) and value.args
                        and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str)
                    ):
                        ids.add(value.args[0].value)
    return ids


def dockerfile_args() -> dict[str, str]:
    args = {}
    for line in DOCKERFILE.read_text().splitlines():
        m = re.match(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)", line)
        if m:
            args.setdefault(m.group(1), m.group(2).strip("\"'"))
    return args


def requirement_pin(name: str) -> str:
    m = re.search(rf"^{re.escape(name)}==([^\s;]+)", REQUIREMENTS.read_text(), re.MULTILINE)
    assert m, f"{name} is not pinned in requirements.txt"
    return m.group(1)


# ---------------------------------------------------------------- compose
def test_compose_parses_and_uses_anchors():
    compose = load_compose()
    assert isinstance(compose.get("services"), dict) and compose["services"]
    assert "x-airflow-common" in compose, "Airflow services should share the x-airflow-common anchor"
    # the merge keys resolved: every Airflow service got the common environment
    for name in AIRFLOW_SERVICES:
        assert "AIRFLOW__CORE__EXECUTOR" in service_env(compose["services"][name]), name


def test_every_needed_service_exists_with_a_health_check():
    services = load_compose()["services"]
    missing = [s for s in NEEDED_SERVICES if s not in services]
    assert not missing, f"services missing from docker-compose.yaml: {missing}"
    for name in NEEDED_SERVICES:
        hc = services[name].get("healthcheck")
        assert hc and hc.get("test") and not hc.get("disable"), f"{name} has no health check"
        assert hc["test"][0] in ("CMD", "CMD-SHELL"), f"{name}: health check must run a command"


def test_apiserver_health_check_and_execution_api_url():
    services = load_compose()["services"]
    api = services["airflow-apiserver"]
    assert "/api/v2/version" in " ".join(api["healthcheck"]["test"])
    assert command_words(api) == ["api-server"]
    url = service_env(services["airflow-scheduler"])["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]
    m = re.fullmatch(r"http://([a-z0-9-]+):(\d+)/execution/", url)
    assert m, f"AIRFLOW__CORE__EXECUTION_API_SERVER_URL={url!r} is not http://<service>:<port>/execution/"
    host, port = m.group(1), m.group(2)
    assert host == "airflow-apiserver", "task runners must reach the api-server by its service name"
    container_ports = {str(p).rsplit(":", 1)[-1] for p in api.get("ports", [])}
    assert port in container_ports | {"8080"}, f"api-server does not listen on {port}"
    for name in AIRFLOW_SERVICES:
        assert service_env(services[name])["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == url


def test_init_migrates_and_creates_the_login_without_pip_at_start():
    services = load_compose()["services"]
    init = services["airflow-init"]
    script = "\n".join(command_words(init)) if isinstance(init.get("command"), str) else "\n".join(init["command"])
    assert "airflow db migrate" in script
    assert "SIMPLE_AUTH_MANAGER_PASSWORDS_FILE" in script
    for name in AIRFLOW_SERVICES:
        deps = services[name].get("depends_on", {})
        assert deps.get("airflow-init", {}).get("condition") == "service_completed_successfully", name
        assert deps.get("postgres", {}).get("condition") == "service_healthy", name
    assert "_PIP_ADDITIONAL_REQUIREMENTS" not in code_lines(COMPOSE_FILE)


def test_local_executor_with_low_parallelism():
    services = resolved_compose()["services"]
    for name in AIRFLOW_SERVICES:
        env = service_env(services[name])
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor", name
        assert 1 <= int(env["AIRFLOW__CORE__PARALLELISM"]) <= 8, f"{name}: parallelism too high for old hardware"
    # the default without .env is low as well
    raw = service_env(load_compose()["services"]["airflow-scheduler"])["AIRFLOW__CORE__PARALLELISM"]
    assert int(interpolate(raw, {})) <= 8
    assert "LocalExecutor" in COMPOSE_FILE.read_text().split("services:")[0], "say why LocalExecutor in a comment"


def test_spark_master_and_two_workers_on_the_washline_image():
    services = load_compose()["services"]
    image = services["airflow-scheduler"]["image"]
    master = services["spark-master"]
    assert "org.apache.spark.deploy.master.Master" in command_words(master)
    assert master["image"] == image, "Spark must run the same image (same Python and libraries) as the driver"
    workers = [n for n, s in services.items() if "org.apache.spark.deploy.worker.Worker" in command_words(s)]
    assert sorted(workers) == sorted(SPARK_WORKERS)
    for name in workers:
        words = command_words(services[name])
        assert "spark://spark-master:7077" in words, name
        assert services[name]["image"] == image, name
        assert services[name]["depends_on"]["spark-master"]["condition"] == "service_healthy"
    # executors read and write the data root at the driver's paths
    airflow_mounts = {mount_target(v) for v in services["airflow-scheduler"]["volumes"]}
    for name in ("spark-master", *workers):
        mounts = {mount_target(v) for v in services[name]["volumes"]}
        assert {"/opt/washline/data/landing", "/opt/washline/data/lake"} <= mounts & airflow_mounts, name


def test_volumes_hold_landing_lake_and_data_docs():
    compose = load_compose()
    env = service_env(compose["services"]["airflow-scheduler"])
    data_root = env["WASHLINE_DATA"]
    targets = {mount_target(v) for v in compose["services"]["airflow-scheduler"]["volumes"]}
    for sub in ("landing", "lake", "lake/reports"):
        assert f"{data_root}/{sub}" in targets, f"no volume for {sub}"
    named = {mount_source(v) for v in compose["services"]["airflow-scheduler"]["volumes"]}
    for name in named:
        if not name.startswith(("$", ".", "/")):
            assert name in (compose.get("volumes") or {}), f"named volume {name} is not declared"


def test_target_databases_use_the_requested_images():
    services = load_compose()["services"]
    assert services["sqlserver"]["image"].startswith("mcr.microsoft.com/mssql/server:2022")
    assert services["oracle"]["image"].split(":")[0] in (
        "gvenzl/oracle-free", "container-registry.oracle.com/database/free")
    assert services["staging-postgres"]["image"].startswith("postgres:")
    assert services["sqlserver"]["environment"]["ACCEPT_EULA"] == "Y"


# ------------------------------------------------------------ connections
def test_connection_inventory_covers_the_dag():
    used = dag_connection_ids()
    assert {"spark_default", "washline_staging"} <= used, f"DAG scan found {used}; did the DAG change?"


@pytest.mark.parametrize("conn_id", sorted({"spark_default", *TARGET_CONNECTIONS} | dag_connection_ids()))
def test_connection_defined_in_env_example_and_passed_to_airflow(conn_id):
    from airflow.models.connection import Connection

    env = env_example()
    name = conn_env_name(conn_id)
    assert name in env and env[name], f"{name} is not defined in .env.example"
    conn = Connection.from_json(env[name], conn_id=conn_id)  # raises on malformed JSON
    services = load_compose()["services"]
    for svc in (*AIRFLOW_SERVICES, "airflow-init"):
        value = service_env(services[svc]).get(name)
        assert value is not None, f"{name} is not passed into {svc}"
        m = VAR_REF.fullmatch(value.strip())
        assert m and m.group(1) == name, f"{svc}: {name} must be exactly ${{{name}...}}, got {value!r}"
    if conn_id == "spark_default":
        assert conn.conn_type == "spark"
        assert conn.host == "spark://spark-master:7077"
        assert conn.extra_dejson.get("deploy-mode") == "client"
    if conn_id in TARGET_CONNECTIONS:
        conn_type, service = TARGET_CONNECTIONS[conn_id]
        assert conn.conn_type == conn_type
        assert conn.host == service and service in services, f"{conn_id} must reach the {service} service"


def test_spark_connection_builds_the_standalone_master_url(monkeypatch):
    """The hook must turn the JSON connection into --master spark://spark-master:7077."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", env_example()["AIRFLOW_CONN_SPARK_DEFAULT"])
    hook = SparkSubmitHook(conn_id="spark_default")
    cmd = hook._build_spark_submit_command("/opt/washline/spark_jobs/link.py")
    assert cmd[cmd.index("--master") + 1] == "spark://spark-master:7077"
    assert cmd[cmd.index("--deploy-mode") + 1] == "client"


def test_database_passwords_match_their_connections():
    env = env_example()
    services = load_compose()["services"]

    def conn(conn_id: str) -> dict:
        return json.loads(env[conn_env_name(conn_id)])

    pg = service_env(services["staging-postgres"])
    for conn_id in ("washline_staging", "washline_staging_postgres"):
        c = conn(conn_id)
        assert c["login"] == pg["POSTGRES_USER"] and c["schema"] == pg["POSTGRES_DB"], conn_id
        assert c["password"] == env["STAGING_POSTGRES_PASSWORD"], f"{conn_id} password differs from staging-postgres"
    c = conn("washline_staging_mssql")  # the least-privilege login, never sa
    init = service_env(services["sqlserver-init"])
    assert c["login"] == "washline" and c["password"] == env["MSSQL_WASHLINE_PASSWORD"]
    assert init["WASHLINE_MSSQL_PASSWORD"] == "${MSSQL_WASHLINE_PASSWORD:?set MSSQL_WASHLINE_PASSWORD in .env}"
    c = conn("washline_staging_oracle")
    ora = service_env(services["oracle"])
    assert c["login"] == "washline" and c["password"] == env["ORACLE_APP_PASSWORD"]
    assert ora["ORACLE_APP_PASSWORD"] == "${ORACLE_APP_PASSWORD:?set ORACLE_APP_PASSWORD in .env}"


def test_every_compose_variable_is_in_env_example():
    text = "\n".join(compose_strings())
    env = env_example()
    required = {m.group(1) for m in VAR_REF.finditer(text) if m.group(2) in (":?", "?")}
    assert required, "compose should fail clearly (${VAR:?message}) when a secret is missing"
    assert not required - env.keys(), f"required by compose but not in .env.example: {sorted(required - env.keys())}"
    everything = {m.group(1) for m in VAR_REF.finditer(text)}
    assert not everything - env.keys(), f"used by compose but not documented in .env.example: {sorted(everything - env.keys())}"
    resolved_compose()  # interpolates without a missing variable


# ------------------------------------------------------------------ image
def test_dockerfile_from_matches_the_airflow_pin():
    args = dockerfile_args()
    text = DOCKERFILE.read_text()
    from_lines = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert any(f.startswith("${AIRFLOW_IMAGE}") or f.startswith("apache/airflow:") for f in from_lines)
    image = args["AIRFLOW_IMAGE"]
    m = re.fullmatch(r"apache/airflow:(?:slim-)?(\d+\.\d+\.\d+)-python(\d+\.\d+)", image)
    assert m, f"AIRFLOW_IMAGE={image!r} is not an official apache/airflow:<version>-python<x.y> tag"
    assert m.group(1) == requirement_pin("apache-airflow"), "Airflow in FROM differs from requirements.txt"
    assert m.group(2) == "3.11", "requirements.txt is a lock for Python 3.11"
    # compose and .env.example build the same base
    assert f"${{AIRFLOW_IMAGE:-{image}}}" in COMPOSE_FILE.read_text()
    assert env_example()["AIRFLOW_IMAGE"] == image


def test_dockerfile_installs_java17_requirements_and_the_project():
    text = DOCKERFILE.read_text()
    assert "openjdk-17-jre-headless" in text
    assert re.search(r"^ENV\s+JAVA_HOME=\S*java-17", text, re.MULTILINE)
    assert re.search(r"^COPY\b.*\brequirements\.txt\b", text, re.MULTILINE)
    pip_lines = [l for l in re.findall(r"^RUN .*$", text, re.MULTILINE) if "pip install" in l]
    assert any(re.search(r"-r\s+\S*requirements\.txt", l) for l in pip_lines), "the image must install requirements.txt"
    assert any('"apache-airflow==${AIRFLOW_VERSION}"' in l for l in pip_lines), "pin Airflow next to the lock"
    assert any("--no-deps -e ." in l for l in pip_lines), "install washline itself (editable, no deps)"
    assert "_PIP_ADDITIONAL_REQUIREMENTS" not in code_lines(DOCKERFILE)
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    assert users and users[-1] == "airflow", "the image must end as the airflow user, not root"
    for folder in ("dags", "src", "plugins", "spark_jobs", "include", "sql"):
        assert re.search(rf"^COPY\b.*\b{folder}\b", text, re.MULTILINE), f"{folder}/ not copied into the image"


def test_dockerignore_keeps_secrets_and_data_out_of_the_image():
    ignored = {l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines() if l.strip() and not l.startswith("#")}
    assert {".env", ".venv", "data", ".git"} <= ignored


# ---------------------------------------------------------------- secrets
#: NAME_WITH_PASSWORD=value / NAME_WITH_SECRET: value (env, YAML, Makefile, Dockerfile);
#: not inside ${...} (a reference) and not part of a longer name such as *_PASSWORDS_FILE
ENV_KEY = re.compile(
    r"""(?<![{$\w])(?P<key>[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|SECRET_KEY|FERNET_KEY|TOKEN|API_KEY))["']?\s*(?:\?=|:=|=|:)\s*(?P<value>[^\n#]*)"""
)
#: password: value / secret = value as a key of its own line (YAML, ini, conf)
CONF_KEY = re.compile(
    r"""^\s*(?:-\s*)?["']?(?:password|passwd|secret|secret_key|api_key|token)["']?\s*[:=]\s*(?P<value>[^\n#]*)""",
    re.IGNORECASE,
)
URL_CREDS = re.compile(r"\b[a-z][a-z0-9+.-]*://(?P<user>[^\s/:@'\"]+):(?P<value>[^\s@/'\"]+)@", re.IGNORECASE)
JSON_PASSWORD = re.compile(r"""["']password["']\s*:\s*["'](?P<value>[^"']*)["']""", re.IGNORECASE)
PY_PASSWORD_KW = re.compile(r"""\bpassword\s*=\s*["'](?P<value>[^"']+)["']""", re.IGNORECASE)
PRIVATE_KEY = re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----")
TEXT_SUFFIXES = {
    "", ".py", ".yaml", ".yml", ".json", ".md", ".txt", ".cfg", ".ini", ".toml", ".conf", ".sh", ".sql", ".env",
    ".example", ".in", ".j2", ".tpl",
}


def _is_placeholder(value: str) -> bool:
    """A value that is clearly not a committed secret: empty, a variable or
    command reference (``${VAR}``, ``$VAR``, ``$(cmd)``), a template, or an
    angle-bracket / elided placeholder such as ``<your password>``."""
    v = value.strip().strip("\"'`,;").strip()
    return not v or v.startswith(("$", "<", "***", "\u2026", "...", "{{", "%")) or v.lower() in {"none", "null"}


#: Fake credentials that tests feed to parsers or redaction checks, allowed
#: only in the named file and only with exactly these values. A line can also
#: opt out with the marker ``secret-scan: allow`` (reviewed like any code).
FIXTURE_ALLOWLIST: dict[str, set[str]] = {
    # connection_from_uri parser test, fake host "h"
    "tests/integration/test_integrity_sqlite.py": {"s%40cret", "s@cret"},
}


def find_plaintext_secrets(path: str, text: str) -> list[str]:
    """Return ``path:line: reason`` for every committed credential in ``text``.

    Python files are only checked for literal ``password="..."`` / ``"password":
    "..."`` and URL credentials (a constant named SECRET in a redaction test is
    a fixture, not a credential); configuration, docs and scripts are also
    checked for ``*PASSWORD*/*SECRET*/*TOKEN*`` assignments.
    """
    findings = []
    is_py = path.endswith(".py")
    allowed = FIXTURE_ALLOWLIST.get(path, set())
    for lineno, line in enumerate(text.splitlines(), 1):
        if "secret-scan: allow" in line:
            continue
        checks = [URL_CREDS, JSON_PASSWORD, PRIVATE_KEY]
        checks += [PY_PASSWORD_KW] if is_py else [ENV_KEY, CONF_KEY]
        for pattern in checks:
            for m in pattern.finditer(line):
                value = m.groupdict().get("value", "x")
                if pattern is not PRIVATE_KEY and (_is_placeholder(value) or value.strip("\"'") in allowed):
                    continue
                findings.append(f"{path}:{lineno}: {line.strip()[:120]}")
    return findings


def committed_text_files() -> list[Path]:
    """Files git tracks or would track (untracked but not ignored), minus binaries."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT, check=True, capture_output=True, timeout=60,
        ).stdout.decode()
        paths = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.SubprocessError):  # not a git checkout: walk the tree
        skip = {".git", ".venv", "data", ".airflow", "__pycache__", ".pytest_cache"}
        paths = [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]
    files = []
    for p in paths:
        if not p.is_file() or (p.suffix not in TEXT_SUFFIXES and p.name not in {"Dockerfile", "Makefile"}):
            continue
        if p.stat().st_size > 2_000_000 or b"\0" in p.read_bytes()[:8192]:
            continue
        files.append(p)
    return files


def test_secret_scanner_catches_what_it_should():
    bad = {
        "docker-compose.yaml": "      POSTGRES_PASSWORD: airflow\n",
        "x.yaml": "    AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: postgresql+psycopg2://airflow:airflow@postgres/airflow\n",
        "docs/x.md": """AIRFLOW_CONN_X='{"conn_type":"mssql","password":"Hunter2!"}'\n""",
        "plugins/x.py": 'hook = Hook(login="sa", password="Hunter2!")\n',
        "Makefile": "export AIRFLOW__API_AUTH__JWT_SECRET ?= 0123456789abcdef\n",
    }
    for path, text in bad.items():
        assert find_plaintext_secrets(path, text), f"scanner missed a secret in {path}: {text!r}"
    good = {
        "docker-compose.yaml": "      POSTGRES_PASSWORD: ${AIRFLOW_DB_PASSWORD:?set it}\n",
        "x.yaml": '    CONN: "postgresql+psycopg2://airflow:${AIRFLOW_DB_PASSWORD}@postgres/airflow"\n',
        "docs/x.md": """{"conn_type":"mssql","login":"sa","password":"<your SA password>"}\n""",
        "plugins/x.py": 'body = {"username": user, "password": password}\n',
        "Makefile": "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE: /opt/airflow/auth/passwords.json\n",
    }
    for path, text in good.items():
        assert not find_plaintext_secrets(path, text), f"false positive in {path}: {text!r}"


def test_no_plaintext_password_committed_outside_env_example():
    files = committed_text_files()
    assert any(p.name == "docker-compose.yaml" for p in files), "the scan must cover the compose file"
    findings = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        # .env.example holds the placeholders; this file holds deliberately bad samples
        if rel in (".env.example", "tests/unit/test_compose.py"):
            continue
        findings += find_plaintext_secrets(rel, path.read_text(errors="replace"))
    assert not findings, "plaintext credentials committed:\n" + "\n".join(findings)


def test_compose_secrets_are_only_variable_references():
    pattern = re.compile(r"PASSWORD|SECRET|FERNET_KEY|TOKEN|^AIRFLOW_CONN_")
    for name, svc in load_compose()["services"].items():
        for key, value in service_env(svc).items():
            if pattern.search(key) and not key.endswith("_FILE"):
                assert VAR_REF.fullmatch(value.strip()), f"{name}: {key} must be a ${{VAR}} reference, got {value!r}"


def test_env_file_is_git_ignored():
    """The real .env (copied from .env.example) must never be committed."""
    res = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=ROOT, capture_output=True, timeout=30)
    assert res.returncode == 0, ".env is not git-ignored; add `.env` to .gitignore"
    res = subprocess.run(["git", "check-ignore", "-q", ".env.example"], cwd=ROOT, capture_output=True, timeout=30)
    assert res.returncode == 1, ".env.example must stay committed"


def _pins(path: Path) -> dict[str, str]:
    return {m.group(1).lower(): m.group(2)
            for m in re.finditer(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)", path.read_text(), re.MULTILINE)}


def test_runtime_lock_has_no_development_packages_and_the_dev_lock_agrees_with_it():
    """The image installs requirements.txt only; make venv installs requirements-dev.txt (the same pins plus dev ones)."""
    runtime, dev = _pins(REQUIREMENTS), _pins(ROOT / "requirements-dev.txt")
    dev_only = {"pytest", "pytest-timeout", "networkx", "recordlinkage", "scikit-learn"}
    assert not dev_only & set(runtime), sorted(dev_only & set(runtime))
    assert dev_only <= set(dev)
    assert {k: v for k, v in dev.items() if k in runtime} == runtime, "a package pinned differently in the two locks"
    pip_lines = [l for l in re.findall(r"^RUN .*$", DOCKERFILE.read_text(), re.MULTILINE) if "pip install" in l]
    assert not any("requirements-dev" in l for l in pip_lines)
    assert "-r requirements-dev.txt" in (ROOT / "Makefile").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()
