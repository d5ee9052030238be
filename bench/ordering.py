"""Benchmark: variant filtering and ordering, wheelwise vs variantlib 0.2.2.

Generates a deterministic (seeded) index of variants, a machine that supports a
subset of their properties, and times

* ``wheelwise.variants.ordering.rank_variants`` and
* ``variantlib.resolver.lib.sort_and_filter_supported_variants``

on the same input in the same process (median of several runs each, measured
with ``time.perf_counter``). Input construction (``VariantMetadata``,
``SupportedProperties``, variantlib's ``VariantDescription`` objects) is not
timed. It also checks that both produce the same order.

Usage::

    .venv/bin/python bench/ordering.py [--variants 5000] [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from benchkit import machine_info
from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.ordering import rank_variants
from wheelwise.variants.supported import SupportedProperties

PropTable = dict[str, dict[str, list[str]]]

# namespace -> feature -> (number of possible values, multi-valued?)
SCHEMA: dict[str, dict[str, tuple[int, bool]]] = {
    "nvidia": {
        "cuda_version_lower_bound": (12, False),
        "sm_arch": (24, True),
        "driver_branch": (6, False),
        "tensor_cores": (3, False),
    },
    "x86_64": {
        "level": (4, False),
        "avx512_bf16": (2, False),
        "avx512_fp16": (2, False),
        "amx": (3, True),
        "vendor": (3, False),
    },
    "amd": {
        "rocm_version_lower_bound": (8, False),
        "gfx_arch": (16, True),
        "xnack": (2, False),
    },
    "blas_lapack": {
        "provider": (6, False),
        "interface": (2, False),
        "threading": (3, False),
        "ilp64": (2, False),
    },
}
NAMESPACE_ORDER = ["nvidia", "amd", "x86_64", "blas_lapack"]


def all_values(feature: str, count: int) -> list[str]:
    return [f"{feature[:3]}{i}" for i in range(count)]


def generate(
    n_variants: int, seed: int, machine_kind: str = "subset"
) -> tuple[PropTable, dict[str, PropTable]]:
    """(machine, variants): deterministic for a given seed and machine kind.

    ``subset``: the machine knows three of the four namespaces, all but one feature
    of each, and two thirds of each feature's values (most variants are rejected).
    ``broad``: all namespaces and features, five sixths of the values (about half
    of the variants are compatible).
    """
    rnd = random.Random(seed)
    machine: PropTable = {}
    broad = machine_kind == "broad"
    for ns in list(SCHEMA) if broad else ["nvidia", "x86_64", "blas_lapack"]:
        features = list(SCHEMA[ns])
        rnd.shuffle(features)
        machine[ns] = {}
        for feature in features if broad else features[: max(1, len(features) - 1)]:
            values = all_values(feature, SCHEMA[ns][feature][0])
            rnd.shuffle(values)
            keep = (len(values) * 5) // 6 if broad else (len(values) * 2) // 3
            machine[ns][feature] = values[: max(1, keep)]

    variants: dict[str, PropTable] = {}
    for i in range(n_variants):
        target = rnd.randint(1, 12)
        props: PropTable = {}
        count = 0
        candidates = [(ns, f) for ns, fs in SCHEMA.items() for f in fs]
        rnd.shuffle(candidates)
        for ns, feature in candidates:
            if count >= target:
                break
            size, multi = SCHEMA[ns][feature]
            pool = all_values(feature, size)
            k = min(rnd.randint(1, 4) if multi else 1, target - count, size)
            props.setdefault(ns, {})[feature] = rnd.sample(pool, k)
            count += k
        variants[f"v{i:05d}"] = props
    variants[NULL_LABEL] = {}
    return machine, variants


def measure(contenders: Mapping[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Seconds per call, ``runs`` calls each, interleaved so load spikes hit all alike."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, func in contenders.items():
            start = time.perf_counter()
            func()
            times[name].append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--variants", type=int, default=5000, help="number of variants")
    parser.add_argument("--runs", type=int, default=15, help="timed runs per implementation")
    parser.add_argument("--seed", type=int, default=825, help="random seed for the input")
    parser.add_argument(
        "--machine",
        choices=["subset", "broad"],
        default="subset",
        help="how much of the generated properties the machine supports",
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    args = parser.parse_args(argv)

    from variantlib.models.variant import VariantDescription
    from variantlib.models.variant import VariantProperty as VlProperty
    from variantlib.resolver.lib import sort_and_filter_supported_variants
    from variantlib.variants_json import VariantsJson

    system, variants = generate(args.variants, args.seed, args.machine)
    metadata = VariantMetadata.build(NAMESPACE_ORDER, variants)
    supported = SupportedProperties.from_dict(system)
    vl_descs = [
        VariantDescription(
            properties=[
                VlProperty(ns, f, v) for ns, fs in props.items() for f, vs in fs.items() for v in vs
            ],
            label=label,
        )
        for label, props in variants.items()
    ]
    vl_supported = [
        VlProperty(ns, f, v) for ns, fs in system.items() for f, vs in fs.items() for v in vs
    ]
    n_properties = sum(
        len(vs) for props in variants.values() for fs in props.values() for vs in fs.values()
    )

    # The same index as a *-variants.json document both libraries can read (variantlib
    # needs a providers block), for the end-to-end "parse, then rank" rows.
    document = json.dumps(
        {
            "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
            "default-priorities": {"namespace": NAMESPACE_ORDER},
            "providers": {ns: {"requires": [f"provider-{ns}"]} for ns in NAMESPACE_ORDER},
            "variants": variants,
        }
    ).encode()

    def run_wheelwise() -> list[str]:
        return list(rank_variants(metadata, supported).order)

    def run_wheelwise_load() -> list[str]:
        loaded = VariantMetadata.from_json(document)
        return list(rank_variants(loaded, supported).order)

    def run_variantlib_load() -> list[str]:
        loaded = VariantsJson(json.loads(document))
        result = sort_and_filter_supported_variants(
            list(loaded.variants.values()),
            vl_supported,
            namespace_priorities=list(NAMESPACE_ORDER),
        )
        return [str(vdesc.label) for vdesc in result]

    def variantlib_runner(filter_values: bool) -> Callable[[], list[str]]:
        def run() -> list[str]:
            # variantlib appends its null variant to the list it is given: pass a copy.
            result = sort_and_filter_supported_variants(
                list(vl_descs),
                vl_supported,
                namespace_priorities=list(NAMESPACE_ORDER),
                filter_values=filter_values,
            )
            return [str(vdesc.label) for vdesc in result]

        return run

    contenders: dict[str, Callable[[], list[str]]] = {
        "wheelwise": run_wheelwise,
        "variantlib": variantlib_runner(False),
        "variantlib_filter_values": variantlib_runner(True),
        "wheelwise_load": run_wheelwise_load,
        "variantlib_load": run_variantlib_load,
    }
    titles = {
        "wheelwise": "wheelwise rank_variants",
        "variantlib": "variantlib sort_and_filter_supported_variants",
        "variantlib_filter_values": "  same, filter_values=True",
        "wheelwise_load": "wheelwise from_json + rank_variants",
        "variantlib_load": "variantlib VariantsJson + sort_and_filter",
    }
    # Warm-up, and the orders to compare.
    orders = {name: func() for name, func in contenders.items()}
    reference = orders["wheelwise"]
    agree = all(order == reference for order in orders.values())
    times = measure(contenders, args.runs)
    medians = {name: statistics.median(values) for name, values in times.items()}
    # Each row is compared with the wheelwise row that does the same work.
    baseline = {
        name: "wheelwise_load" if name.endswith("_load") else "wheelwise" for name in contenders
    }

    results: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/ordering.py", *(argv or sys.argv[1:])]),
        "machine": machine_info(),
        "input": {
            "variants": len(variants),
            "properties": n_properties,
            "seed": args.seed,
            "machine": args.machine,
            "compatible": len(reference),
            "rejected": len(variants) - len(reference),
        },
        "runs": args.runs,
        "timings_ms": {
            name: {
                "median": medians[name] * 1e3,
                "min": min(values) * 1e3,
                "max": max(values) * 1e3,
            }
            for name, values in times.items()
        },
        "speedup": {
            name: medians[name] / medians[baseline[name]]
            for name in contenders
            if baseline[name] != name
        },
        "same_order": agree,
    }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        info = results["machine"]
        print(
            f"machine: {info['implementation']} {info['python']}, {info['platform']}, "
            f"{info['cpu']}, nproc={info['nproc']}"
        )
        inp = results["input"]
        print(
            f"input: {inp['variants']} variants ({inp['properties']} properties), "
            f"{inp['compatible']} compatible, {inp['rejected']} rejected, "
            f"machine {inp['machine']}, seed {inp['seed']}"
        )
        print(f"runs: {args.runs} each, interleaved (ms)")
        print()
        print(f"{'implementation':<46} {'median':>8} {'min':>8} {'max':>8} {'vs ww':>7}")
        for name, values in times.items():
            print(
                f"{titles[name]:<46} {medians[name] * 1e3:>8.2f} {min(values) * 1e3:>8.2f} "
                f"{max(values) * 1e3:>8.2f} {medians[name] / medians[baseline[name]]:>6.1f}x"
            )
        print()
        print(f"same order: {'yes' if agree else 'NO'} ({len(reference)} compatible labels)")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
