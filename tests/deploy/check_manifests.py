#!/usr/bin/env python3
"""Offline checks of deploy/ against the darcy binary: the Kubernetes manifests and the systemd
unit must only set the DARCY_* variables `darcy` reads (as its --help lists them), and their
parts must refer to each other correctly (service and pod labels, ports, volumes, the seed's
DNS name). Exits 1 with one line per problem.

Usage: check_manifests.py DARCY_BINARY DEPLOY_DIR
"""
import configparser
import os
import re
import subprocess
import sys

import yaml


def darcy_variables(binary):
    """The environment variables `darcy` and `darcy node` read, from their --help."""
    names = set()
    for args in ([], ["node"]):
        out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True).stdout
        names.update(re.findall(r"Env:(DARCY_[A-Z_]+)", out))
    if "DARCY_NAME" not in names:
        sys.exit(f"check_manifests: {binary} --help lists no DARCY_NAME: not a darcy binary?")
    return names


def check_kubernetes(path, known, problems):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    by_kind = {}
    for d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                problems.append(f"{path}: a document without {key}")
        by_kind.setdefault(d.get("kind"), []).append(d)
    services = by_kind.get("Service", [])
    sets = by_kind.get("StatefulSet", [])
    if len(services) != 1 or len(sets) != 1:
        problems.append(f"{path}: expected one Service and one StatefulSet")
        return
    service, sts = services[0], sets[0]
    spec = sts["spec"]
    pod = spec["template"]
    labels = pod["metadata"].get("labels", {})
    if spec.get("serviceName") != service["metadata"]["name"]:
        problems.append(f"{path}: the StatefulSet's serviceName is not the Service's name")
    if service["spec"].get("clusterIP") != "None":
        problems.append(f"{path}: the Service must be headless (clusterIP: None) for pod DNS names")
    for selector, what in ((service["spec"]["selector"], "Service selector"),
                           (spec["selector"]["matchLabels"], "StatefulSet selector")):
        if any(labels.get(k) != v for k, v in selector.items()):
            problems.append(f"{path}: the {what} does not match the pod labels")
    volumes = {v["name"] for v in pod["spec"].get("volumes", [])}
    volumes |= {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
    service_ports = {p["port"] for p in service["spec"]["ports"]}
    containers = pod["spec"].get("initContainers", []) + pod["spec"]["containers"]
    for c in containers:
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                problems.append(f"{path}: container {c['name']} mounts unknown volume {m['name']}")
    main = pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in main.get("env", [])}
    for name in env:
        if name.startswith("DARCY_") and name not in known and name != "DARCY_SEED":
            problems.append(f"{path}: {name} is not a variable darcy reads")
    for name in ("DARCY_NAME", "DARCY_LISTEN", "DARCY_ADVERTISE", "DARCY_SECRET_FILE"):
        if name not in env:
            problems.append(f"{path}: the node container does not set {name}")
    listen_port = int(env.get("DARCY_LISTEN", ":0").rsplit(":", 1)[1])
    container_ports = {p["containerPort"] for p in main.get("ports", [])}
    if listen_port not in container_ports or listen_port not in service_ports:
        problems.append(f"{path}: DARCY_LISTEN's port {listen_port} is not the container's "
                        f"and the Service's port")
    seed = env.get("DARCY_SEED", "")
    expected_seed = f"{sts['metadata']['name']}-0.{service['metadata']['name']}."
    if not seed.startswith(expected_seed) or not seed.endswith(f":{listen_port}"):
        problems.append(f"{path}: DARCY_SEED {seed!r} is not pod 0's DNS name and port")
    script = " ".join(main.get("command", []))
    if "DARCY_JOIN" not in script or "darcy node" not in script:
        problems.append(f"{path}: the command must set DARCY_JOIN on members and run darcy node")
    secret_file = env.get("DARCY_SECRET_FILE", "")
    if not any(secret_file.startswith(m["mountPath"]) for m in main.get("volumeMounts", [])):
        problems.append(f"{path}: DARCY_SECRET_FILE {secret_file} is on no mounted volume")


def check_systemd(unit_path, env_path, known, problems):
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(unit_path)
    for section in ("Unit", "Service", "Install"):
        if section not in unit:
            problems.append(f"{unit_path}: no [{section}] section")
    service = unit["Service"] if "Service" in unit else {}
    if not service.get("ExecStart", "").endswith("darcy node"):
        problems.append(f"{unit_path}: ExecStart must run darcy node")
    if service.get("KillSignal") != "SIGTERM":
        problems.append(f"{unit_path}: a node leaves the cluster on SIGTERM; KillSignal must be it")
    with open(env_path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name = line.split("=", 1)[0]
            if name not in known:
                problems.append(f"{env_path}:{number}: {name} is not a variable darcy reads")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, deploy = sys.argv[1:]
    known = darcy_variables(binary)
    problems = []
    check_kubernetes(os.path.join(deploy, "kubernetes", "darcy.yaml"), known, problems)
    check_systemd(os.path.join(deploy, "systemd", "darcy-node.service"),
                  os.path.join(deploy, "systemd", "node.env.example"), known, problems)
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"deploy: manifests and unit agree with darcy ({len(known)} variables)")


if __name__ == "__main__":
    main()
