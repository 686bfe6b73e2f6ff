"""What the benchmark summaries share (bench/compare/summarize.py, bench/cluster/summarize.py):
reading a harness's JSON output, formatting sizes and figures, and the table of targets."""
import json


def load(path):
    """The JSON document in file `path`, or None when it cannot be read or parsed. Text before
    the first "{" (a launcher line on stdout) is skipped."""
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text[text.index("{"):])
    except (OSError, ValueError):
        return None


def human(n):
    """A byte count as the largest whole binary unit: 8 B, 64 KiB, 4 MiB."""
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def fmt(v, digits=2):
    """A figure with `digits` decimals, or "—" for one that was not measured."""
    return "—" if v is None else f"{v:.{digits}f}"


def print_targets(heading, worst_label, targets):
    """Markdown: a section `heading` with one row per (text, worst, threshold, higher_is_better),
    PASS when the worst value meets the threshold, else MISS."""
    print(f"## {heading}\n")
    print(f"| target | {worst_label} | result |")
    print("|---|---|---|")
    for text, worst, thr, higher in targets:
        ok = worst is not None and (worst >= thr if higher else worst <= thr)
        print(f"| {text} | {fmt(worst)} | {'PASS' if ok else 'MISS'} |")
