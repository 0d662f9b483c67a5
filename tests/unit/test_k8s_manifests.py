"""Structural tests of the Kubernetes manifests in ``deploy/k8s/`` (no cluster needed).

- Every manifest parses and names its apiVersion, kind and metadata.name.
- The link job is a ``sparkoperator.k8s.io/v1beta2`` SparkApplication whose
  arguments satisfy ``spark_jobs/link.py``'s required options, ships ``hdwm``
  with ``pyFiles``, sets driver and executor resources, and runs under a
  service account that the RBAC manifest defines and binds.
- The GPU taint ``nvidia.com/gpu=true:NoSchedule`` is tolerated only by pods
  that request a GPU, and every pod that requests a GPU tolerates it.
- Volumes reference the NFS claim of ``storage.yaml``, mounted at the data root.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
GPU_KEY = "nvidia.com/gpu"
DATA_ROOT = "/opt/washline/data"
QUANTITY = re.compile(r"^\d+(\.\d+)?([kmgtKMGT]i?|[mgkt])?$")


def manifests() -> list[tuple[str, dict]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


def by_kind(kind: str) -> list[dict]:
    return [d for _, d in manifests() if d.get("kind") == kind]


def link_app() -> dict:
    apps = [d for d in by_kind("SparkApplication") if d["metadata"]["name"] == "washline-link"]
    assert len(apps) == 1, "deploy/k8s must define exactly one SparkApplication washline-link"
    return apps[0]


def pod_specs() -> list[tuple[str, dict, bool]]:
    """(name, spec-with-tolerations, requests_gpu) for every pod a manifest creates."""
    out = []
    for _, doc in manifests():
        kind, name = doc.get("kind"), doc.get("metadata", {}).get("name")
        if kind == "SparkApplication":
            for role in ("driver", "executor"):
                spec = doc["spec"].get(role, {})
                out.append((f"{name}/{role}", spec, bool(spec.get("gpu"))))
        elif kind in ("Job", "Deployment", "StatefulSet", "DaemonSet", "CronJob", "Pod"):
            spec = doc["spec"]
            if kind == "CronJob":
                spec = spec["jobTemplate"]["spec"]
            pod = spec if kind == "Pod" else spec["template"]["spec"]
            gpu = any(
                GPU_KEY in ((c.get("resources") or {}).get("limits") or {})
                or GPU_KEY in ((c.get("resources") or {}).get("requests") or {})
                for c in pod.get("containers", []) + pod.get("initContainers", [])
            )
            out.append((f"{name}", pod, gpu))
    return out


def required_link_options() -> set[str]:
    """Options ``spark_jobs/link.py`` declares with ``required=True``."""
    tree = ast.parse((ROOT / "spark_jobs" / "link.py").read_text())
    required = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            if any(k.arg == "required" and getattr(k.value, "value", False) is True for k in node.keywords):
                required.add(node.args[0].value)
    return required


def test_every_manifest_parses_and_is_named():
    docs = manifests()
    assert len(docs) >= 5
    for fname, doc in docs:
        assert doc.get("apiVersion") and doc.get("kind"), fname
        assert doc.get("metadata", {}).get("name"), f"{fname}: {doc.get('kind')} without a name"
        if doc["kind"] not in ("Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding"):
            assert doc["metadata"].get("namespace") == "washline", f"{fname}: {doc['kind']} outside namespace washline"


def test_link_spark_application_shape():
    app = link_app()
    spec = app["spec"]
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert spec["type"] == "Python" and spec["mode"] == "cluster"
    assert spec["mainApplicationFile"].endswith("/spark_jobs/link.py")
    assert spec["image"] and ":" in spec["image"].rsplit("/", 1)[-1], "pin the image tag"
    pin = re.search(r"^pyspark==(\S+)", (ROOT / "requirements.txt").read_text(), re.MULTILINE).group(1)
    assert spec["sparkVersion"] == pin, "sparkVersion must match the pyspark pin"
    args = spec["arguments"]
    assert all(isinstance(a, str) for a in args), "arguments must be strings (quote dates)"
    missing = required_link_options() - set(args)
    assert not missing, f"link.py requires {sorted(missing)}"
    for flag in ("--curated", "--out", "--checkpoint-dir"):
        if flag in args:
            assert args[args.index(flag) + 1].startswith(DATA_ROOT + "/lake/"), flag
    py_files = spec["deps"]["pyFiles"]
    assert py_files and any("hdwm" in f and f.endswith(".zip") for f in py_files), "hdwm must reach executors"
    assert spec["sparkConf"]["spark.sql.session.timeZone"] == "UTC"


def test_link_arguments_are_the_operators_with_the_entity_registry(monkeypatch):
    """The manifest passes what SparkJobOperator passes for its date (entity_registry=true, no decisions file)."""
    from washline.operators import job_arguments, link_mode
    from washline.paths import RunPaths

    args = link_app()["spec"]["arguments"]
    monkeypatch.setenv("WASHLINE_DATA", DATA_ROOT)
    paths = RunPaths.for_run(args[args.index("--ds") + 1], "landing")
    assert args == job_arguments("link", paths, "default", **link_mode({}))


@pytest.mark.parametrize("role", ["driver", "executor"])
def test_link_resources_are_set(role):
    pod = link_app()["spec"][role]
    assert isinstance(pod["cores"], int) and pod["cores"] >= 1
    for key in ("memory", "memoryOverhead", "coreLimit"):
        assert QUANTITY.match(str(pod[key])), f"{role}.{key}={pod.get(key)!r}"
    if role == "executor":
        assert isinstance(pod["instances"], int) and pod["instances"] >= 1


def test_link_job_has_no_gpu_toleration():
    spec = link_app()["spec"]
    for role in ("driver", "executor"):
        assert not spec[role].get("tolerations"), f"link {role} must not tolerate GPU nodes"
        assert not spec[role].get("gpu")
    assert not spec.get("tolerations")


def test_gpu_tolerations_only_where_a_gpu_is_requested():
    pods = pod_specs()
    assert pods
    for name, pod, wants_gpu in pods:
        gpu_tols = [t for t in pod.get("tolerations") or [] if t.get("key") == GPU_KEY]
        if wants_gpu:
            assert gpu_tols, f"{name} requests a GPU but does not tolerate the {GPU_KEY} taint"
            for t in gpu_tols:
                assert t.get("effect") == "NoSchedule" and t.get("value") == "true" and t.get("operator") == "Equal"
        else:
            assert not gpu_tols, f"{name} tolerates the GPU taint without requesting a GPU"


def test_every_pod_sets_resources():
    for name, pod, _ in pod_specs():
        if "containers" in pod:
            for c in pod["containers"]:
                res = c.get("resources") or {}
                assert res.get("requests") and res.get("limits"), f"{name}/{c['name']}: set requests and limits"
                assert "memory" in res["limits"], f"{name}/{c['name']}: no memory limit"


def test_service_account_and_rbac():
    accounts = {d["metadata"]["name"] for d in by_kind("ServiceAccount")}
    driver_sa = link_app()["spec"]["driver"]["serviceAccount"]
    assert driver_sa in accounts
    roles = {d["metadata"]["name"]: d for d in by_kind("Role")}
    bound = {}
    for rb in by_kind("RoleBinding"):
        for subject in rb["subjects"]:
            bound.setdefault(subject["name"], []).append(roles[rb["roleRef"]["name"]])
    assert driver_sa in bound, f"service account {driver_sa} is not bound to a Role"
    verbs = {v for role in bound[driver_sa] for rule in role["rules"] if "pods" in rule["resources"] for v in rule["verbs"]}
    assert {"create", "delete", "watch", "list", "get"} <= verbs, "a driver must create and delete its executor pods"
    # nothing cluster-wide
    assert not by_kind("ClusterRoleBinding")


def test_volumes_use_the_shared_data_claim():
    claims = {d["metadata"]["name"]: d for d in by_kind("PersistentVolumeClaim")}
    spec = link_app()["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    for role in ("driver", "executor"):
        for mount in spec[role]["volumeMounts"]:
            vol = volumes[mount["name"]]
            claim = vol["persistentVolumeClaim"]["claimName"]
            assert claim in claims and "ReadWriteMany" in claims[claim]["spec"]["accessModes"]
            assert mount["mountPath"] == DATA_ROOT


def test_spark_defaults_for_spark_submit_on_kubernetes():
    """The spark-submit (SparkSubmitOperator -> k8s://) defaults match the manifests."""
    conf = {}
    for line in (K8S / "spark-defaults.conf").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            conf[key] = value.strip()
    accounts = {d["metadata"]["name"] for d in by_kind("ServiceAccount")}
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] in accounts
    assert conf["spark.kubernetes.container.image"] == link_app()["spec"]["image"]
    claims = {d["metadata"]["name"] for d in by_kind("PersistentVolumeClaim")}
    for role in ("driver", "executor"):
        prefix = f"spark.kubernetes.{role}.volumes.persistentVolumeClaim."
        mounted = {k[len(prefix):].split(".")[0] for k in conf if k.startswith(prefix)}
        assert mounted and mounted <= claims, role
        assert any(conf[k] == DATA_ROOT for k in conf if k.startswith(prefix) and k.endswith("mount.path"))
    assert not any("toleration" in k for k in conf), "CPU jobs submitted this way must not tolerate GPU nodes"


def test_docs_name_the_gpu_taint_and_the_k8s_master():
    doc = (ROOT / "docs" / "deploy.md").read_text()
    assert "nvidia.com/gpu=true:NoSchedule" in doc
    assert "k8s://https://" in doc and '"deploy-mode":"cluster"' in doc.replace(" ", "")
