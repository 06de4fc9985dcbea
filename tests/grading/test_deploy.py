"""The Kubernetes deployment of instructor/deploy/, checked offline (no cluster here).

* Every Kubernetes manifest (the Secret example, the two ReadWriteMany volumes, the formgrader's Deployment
  and Service, the autograde Indexed Job) is validated by ``kubernetes-validate`` against the vendored
  schemas of Kubernetes 1.37, strictly (an unknown field is an error).
* The Helm values for Zero to JupyterHub parse as YAML; the hub's ``extraConfig`` snippets compile and run,
  in the chart's order, on a traitlets ``Config`` (as the chart's ``jupyterhub_config.py`` runs them): the
  formgrader becomes a hub service with the token of the Secret, its URL is the formgrader's Service, and the
  instructors' group may open it. The chart's own values schema is not vendored, so the keys are not checked.
* The files agree with each other: every Secret key and volume claim they name exists, and every pod of
  the Job runs ``course.py autograde --shard I/N`` with an I/N that ``course.py`` accepts, together covering
  every student once.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from support.paths import INSTRUCTOR
from test_gradebook_server import course_tool
from traitlets.config import Config

DEPLOY = INSTRUCTOR / "deploy"
MANIFESTS = ["gradebook-secret.example.yaml", "course-volumes.yaml", "formgrader.yaml", "autograde-job.yaml"]
KUBERNETES = "1.37.0"


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def every_manifest() -> list[dict]:
    return [d for name in MANIFESTS for d in documents(name)]


def values() -> dict:
    return yaml.safe_load((DEPLOY / "z2jh-config.yaml").read_text())


def walk(node):
    """Every dict inside ``node`` (itself included)."""
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


@pytest.mark.parametrize("name", MANIFESTS)
def test_each_manifest_is_valid_kubernetes(name):
    docs = documents(name)
    assert docs, name
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_validator_refuses_a_wrong_manifest():
    job = next(d for d in every_manifest() if d["kind"] == "Job")
    job["spec"]["completions"] = "eight"  # not a number
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)
    job = next(d for d in every_manifest() if d["kind"] == "Job")
    job["spec"]["template"]["spec"]["containers"][0]["workers"] = 4  # a field no container has
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)


def hub_config(token: str = "a-token") -> Config:
    """The traitlets configuration the hub's extraConfig snippets make, run in the chart's (alphabetical) order."""
    c = Config()
    namespace = {"c": c, "get_config": lambda: c}
    os.environ["FORMGRADER_TOKEN"] = token
    try:
        for name, source in sorted(values()["hub"]["extraConfig"].items()):
            exec(compile(source, name, "exec"), namespace)
    finally:
        del os.environ["FORMGRADER_TOKEN"]
    return c


def test_the_hub_config_makes_the_formgrader_a_service_for_the_instructors():
    c = hub_config("token-from-the-secret")
    services = c.JupyterHub.services.get_value([])
    (formgrader,) = [s for s in services if s["name"] == "formgrader"]
    assert formgrader["api_token"] == "token-from-the-secret"
    service = next(d for d in every_manifest() if d["kind"] == "Service" and d["metadata"]["name"] == "formgrader")
    assert formgrader["url"] == f"http://formgrader:{service['spec']['ports'][0]['port']}"
    groups = c.JupyterHub.load_groups
    instructors = [g for g in groups if g.startswith("formgrade-")]
    assert instructors and groups[instructors[0]]["users"]
    access = [r for r in c.JupyterHub.load_roles if "access:services!service=formgrader" in r["scopes"]]
    assert access and access[0]["groups"] == instructors
    # the hub passes the token from the Secret the formgrader reads its own from
    env = values()["hub"]["extraEnv"]["FORMGRADER_TOKEN"]["valueFrom"]["secretKeyRef"]
    pod = next(d for d in every_manifest() if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    mine = next(e for e in pod["env"] if e["name"] == "JUPYTERHUB_API_TOKEN")["valueFrom"]["secretKeyRef"]
    assert env == mine


def test_the_students_nbgrader_config_compiles_and_names_the_shared_exchange():
    single = values()["singleuser"]
    source = single["extraFiles"]["nbgrader-config"]["stringData"]
    c = Config()
    exec(compile(source, "nbgrader_config.py", "exec"), {"get_config": lambda: c})
    mounts = {m["name"]: m["mountPath"] for m in single["storage"]["extraVolumeMounts"]}
    assert c.Exchange.root == mounts["nbgrader-exchange"]
    assert c.CourseDirectory.course_id == "deriving-attention"


def test_every_secret_key_and_volume_claim_named_exists():
    docs = every_manifest() + [values()]
    secrets = {(d["metadata"]["name"], k) for d in docs if d.get("kind") == "Secret" for k in d["stringData"]}
    claims = {d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"}
    named_secrets = {(n["name"], n["key"]) for d in docs for n in (x.get("secretKeyRef") for x in walk(d)) if n}
    named_claims = {n["claimName"] for d in docs for n in (x.get("persistentVolumeClaim") for x in walk(d)) if n}
    assert named_secrets and named_secrets <= secrets, named_secrets - secrets
    assert named_claims and named_claims <= claims, named_claims - claims
    claim_modes = {d["metadata"]["name"]: d["spec"]["accessModes"] for d in docs if d.get("kind") == "PersistentVolumeClaim"}
    assert all(modes == ["ReadWriteMany"] for modes in claim_modes.values()), claim_modes


def test_the_jobs_pods_run_course_py_on_shards_that_cover_every_student_once():
    job = next(d for d in every_manifest() if d["kind"] == "Job")
    assert job["spec"]["completionMode"] == "Indexed"
    n = job["spec"]["completions"]
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    words = shlex.split(script.replace("$JOB_COMPLETION_INDEX", "{index}"))
    assert words[words.index("autograde") - 3].endswith("instructor/course.py")
    shard = words[words.index("--shard") + 1]
    tool = course_tool()
    parsed = [tool.parse_shard(shard.format(index=i)) for i in range(n)]
    assert parsed == [(i, n) for i in range(n)]
    workers = int(words[words.index("--workers") + 1])
    cpus = job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    assert workers == int(cpus), "one worker per requested core"
    students = [f"s{k:04d}" for k in range(1000)]
    owners = [[i for i, count in parsed if tool.shard_of(s, count) == i] for s in students]
    assert all(len(o) == 1 for o in owners)
    sizes = [sum(o == [i] for o in owners) for i in range(n)]
    assert min(sizes) > 1000 / n / 2, sizes  # no shard is starved


@pytest.mark.parametrize("bad", ["8/8", "-1/4", "1", "a/b", "1/0", "", "2/3/4"])
def test_a_bad_shard_gets_a_clear_error_naming_the_argument(bad):
    message = f"--shard must be I/N, two whole numbers with 0 <= I < N (for example 0/4), not {bad!r}"
    with pytest.raises(ValueError, match=re.escape(message)):
        course_tool().parse_shard(bad)


def test_shards_are_stable_and_refuse_odd_values():
    tool = course_tool()
    assert tool.shard_of("s001", 1) == 0
    assert tool.shard_of("s001", 8) == tool.shard_of("s001", 8)
    assert len({tool.shard_of(f"s{k:03d}", 4) for k in range(40)}) == 4
    for bad in (0, -2, 2.0, True):
        with pytest.raises(ValueError, match="count must be a whole number of at least 1"):
            tool.shard_of("s001", bad)
    with pytest.raises(ValueError, match="student must be a non-empty roster id"):
        tool.shard_of("", 4)


def test_the_page_shows_these_files():
    page = (Path(INSTRUCTOR).parent / "instructors-kubernetes.md").read_text()
    for name in [*MANIFESTS, "z2jh-config.yaml"]:
        assert f"```{{literalinclude}} instructor/deploy/{name}\n" in page, name
