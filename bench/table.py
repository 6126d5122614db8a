#!/usr/bin/env python3
"""Prints Markdown tables of pstrain's benchmark results, for share/doc/benchmarks.md.

    bench/table.py [results directory]     (default: bench/results)

Reads train.json and train_resnet18.json (`pstrain bench train --json`) and
wire.json (`pstrain bench wire --json`), whichever exist. Standard library only.
"""
import json
import os
import sys


def size_label(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return ("%.1f" % (n / size)).removesuffix(".0") + " " + unit
    return "%d B" % n


def fixed(value, decimals):
    return "-" if value is None else "%.*f" % (decimals, value)


def percent(part, whole):
    return "-" if not whole or part is None else "%.0f%%" % (100 * part / whole)


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def describe(doc):
    m, b = doc["machine"], doc["build"]
    return ("%s, %d cores, %.0f GiB; Linux %s; pstrain %s (%s), libtorch %s, BLAS: %s"
            % (m.get("cpu_model") or "unknown CPU", m["cores"],
               m["memory_bytes"] / (1 << 30), m["kernel"].removeprefix("Linux "),
               b["pstrain_version"], b["build_type"], b["libtorch_version"],
               b.get("blas_kind", "unknown")))


def train_table(doc):
    rows = []
    for r in doc["train"]:
        step = r["seconds_per_step"]
        rows.append([r["mode"], fixed(r["samples_per_second"], 0),
                     fixed(r["wall_seconds"], 1), fixed(step, 4),
                     percent(r["compute_seconds_per_step"], step),
                     percent(r["communication_seconds_per_step"], step),
                     percent(r["waiting_seconds_per_step"], step),
                     fixed(r["test_accuracy"], 4), fixed(r["speedup_over_single"], 2)])
    first, last = doc["train"][0], doc["train"][-1]
    title = ("`pstrain bench train`: %s on %s, %d steps of %d samples per worker"
             % (first["model"], first["dataset"], first["steps"], last["batch_size"]))
    single = [r for r in doc["train"] if r["mode"] == "single"]
    if single and single[0]["batch_size"] != last["batch_size"]:
        title += " (single: %d per step)" % single[0]["batch_size"]
    return "\n".join([title, "", markdown(
        ["mode", "samples/s", "wall s", "s/step", "compute", "comm", "waiting",
         "test acc", "speed-up"], rows)])


def wire_table(doc):
    rows = [[c["op"], size_label(c["bytes"]), str(c["workers"]),
             fixed(c["median_us"], 1), fixed(c["p99_us"], 1), fixed(c["gbps"], 2),
             fixed(c["limit_gbps"], 2), percent(c["fraction_of_limit"], 1),
             fixed(c["memcpy_gbps"], 2)]
            for c in doc["wire"]["cases"]]
    return "\n".join(["`pstrain bench wire`: server and workers are threads of one "
                      "process over loopback TCP", "", markdown(
                          ["op", "size", "workers", "median µs", "p99 µs", "GB/s",
                           "limit GB/s", "of limit", "memcpy GB/s"], rows)])


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results")
    printed = False
    for name, table in (("train.json", train_table),
                        ("train_resnet18.json", train_table),
                        ("wire.json", wire_table)):
        path = os.path.join(results, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            doc = json.load(f)
        if printed:
            print()
        print(table(doc))
        print()
        print("Machine: " + describe(doc))
        printed = True
    if not printed:
        sys.exit("table.py: no train.json or wire.json in " + results)


if __name__ == "__main__":
    main()
