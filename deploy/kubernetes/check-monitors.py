#!/usr/bin/env python3
"""Checks the ServiceMonitors and PodMonitors of rendered manifests against
prometheus-operator's CRD schema, strictly: a field the CRD does not have is an error,
as it is for `kubectl apply --validate=strict`.

    kubectl kustomize deploy/kubernetes/overlays/serve > serve.yaml
    python3 deploy/kubernetes/check-monitors.py serve.yaml

kubernetes-validate checks the core kinds but has no schema for these custom resources.
The schema here comes from the models that cloudcoil-models-prometheus-operator (PyPI)
generates from the operator's CRDs: its JSON schema with unknown fields refused, then
the models' own checks (enums, patterns). Prints `ok KIND/NAME` for each object checked,
one line per problem otherwise; exits 1 when any object is invalid, 2 on bad input.
"""

import sys

MONITORING_API = "monitoring.coreos.com/v1"


def load_models():
    try:
        from cloudcoil.models.prometheus_operator import v1
    except ImportError as e:
        sys.exit(
            f"check-monitors: cannot import the prometheus-operator models ({e}): "
            "python3 -m pip install --user cloudcoil-models-prometheus-operator"
        )
    return {"ServiceMonitor": v1.ServiceMonitor, "PodMonitor": v1.PodMonitor}


def refuse_unknown_fields(schema):
    """Marks every object schema that lists its properties as closed."""
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for value in schema.values():
            refuse_unknown_fields(value)
    elif isinstance(schema, list):
        for value in schema:
            refuse_unknown_fields(value)
    return schema


def problems(doc, model):
    import jsonschema
    from jsonschema.exceptions import best_match
    import pydantic

    schema = refuse_unknown_fields(model.model_json_schema(by_alias=True))
    validator = jsonschema.Draft202012Validator(schema)
    found = []
    for error in validator.iter_errors(doc):
        # An optional field's schema is anyOf(type, null): name the inner mismatch.
        error = best_match([error])
        where = ".".join(str(p) for p in error.absolute_path) or "(top)"
        found.append(f"{where}: {error.message[:300]}")
    if not found:
        try:
            model.model_validate(doc)
        except pydantic.ValidationError as e:
            found = [
                f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
                for error in e.errors()
            ]
    return found


def main(paths):
    import yaml

    if not paths:
        sys.exit("usage: check-monitors.py RENDERED.yaml...")
    models = load_models()
    failed = False
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                docs = [d for d in yaml.safe_load_all(f) if d]
        except (OSError, yaml.YAMLError) as e:
            print(f"check-monitors: cannot read {path}: {e}", file=sys.stderr)
            sys.exit(2)
        for doc in docs:
            if not doc.get("apiVersion", "").startswith("monitoring.coreos.com/"):
                continue
            kind = doc.get("kind")
            name = f"{kind}/{doc.get('metadata', {}).get('name')}"
            model = models.get(kind)
            if doc["apiVersion"] != MONITORING_API or model is None:
                print(f"ERROR {path}: {name}: {doc['apiVersion']} {kind} is not checked here")
                failed = True
                continue
            found = problems(doc, model)
            for problem in found:
                print(f"ERROR {path}: {name}: {problem}")
            failed |= bool(found)
            if not found:
                print(f"ok {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
