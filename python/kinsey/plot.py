"""Pictures of releases (``Release.plot()``), drawn with matplotlib where it is installed.

Every picture shows the release and its stated error only: values the guarantee covers
and public functions of its parameters (the noise std), never exact data, so a picture
may be published with the release it shows.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        from . import KinseyError

        raise KinseyError("Release.plot() needs matplotlib: pip install matplotlib") from e
    return plt


def _title(release: Any, what: str) -> str:
    g = release.guarantee
    privacy = (f"rho = {g.rho:g} zCDP, (eps = {g.epsilon:.3g}, delta = {g.delta:g})"
               if g.rho is not None else
               f"eps = {g.epsilon:g}" + (f", delta = {g.delta:g}" if g.delta > 0 else ""))
    nb = g.neighbours.split(":")[0].split(" (")[0].split(", B the")[0]
    return f"{what}\n{privacy}; neighbours: {nb}"


def decay(release: Any, steps: tuple[int, int] | None = None) -> Any:
    """The estimates of a decayed sum with a band of two stated stds either side."""
    plt = _pyplot()
    values = np.atleast_2d(np.asarray(release.values, dtype=np.float64).T).T
    stds = np.atleast_2d(np.asarray(release.stds, dtype=np.float64).T).T
    lo, hi = steps if steps is not None else (max(0, values.shape[0] - 1440), values.shape[0])
    x = np.arange(lo, hi)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for c in range(values.shape[1]):
        name = release.columns[c] if c < len(release.columns) else "estimate"
        y = values[lo:hi, c]
        line, = ax.plot(x, y, lw=1.0, label=f"{name} (released)")
        s = stds[lo:hi, c]
        if c == 0:
            ax.fill_between(x, y - 2 * s, y + 2 * s, color=line.get_color(), alpha=0.2,
                            lw=0, label="± 2 stated std (public)")
    ax.set_xlabel("step")
    ax.set_ylabel("private sum")
    model = release.report["calibration"]["model"]
    ax.set_title(_title(release, f"decayed sum: {model}"), fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def bars(release: Any, labels: list[str], values: np.ndarray, stds: np.ndarray | None,
         what: str, ylabel: str, points: bool = False) -> Any:
    """Released values as bars (counts) or points (statistics) with two stated stds
    either side, where stated."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.5, 0.45 * len(labels) + 2), 4.5))
    x = np.arange(len(labels))
    if points:
        ax.plot(x, values, "o", color="#4c72b0", label="released")
        ax.set_xlim(-0.6, len(labels) - 0.4)
    else:
        ax.bar(x, values, color="#4c72b0", alpha=0.8, label="released")
    if stds is not None and np.any(np.isfinite(stds)):
        ax.errorbar(x, values, yerr=2 * stds, fmt="none", ecolor="black", capsize=3, lw=1,
                    label="± 2 stated std (public)")
    else:
        # Say so rather than draw no error at all.
        ax.plot([], [], " ", label="no std stated for these values (see the report)")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=45 if len(labels) > 6 else 0, ha="right"
                       if len(labels) > 6 else "center", fontsize=8)
    ax.set_ylabel(ylabel)
    if not points:
        ax.axhline(0, color="grey", lw=0.5)
    ax.set_title(_title(release, what), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def tree(release: Any) -> Any:
    """The released tree as a diagram: each split names its attribute and noisy count,
    each leaf its class and noisy class counts."""
    plt = _pyplot()
    t = release.tree
    classes = t["classes"]
    attrs = t["attributes"]
    leaves: list[Any] = []

    def layout(node: dict, depth: int) -> float:
        if node["kind"] == "leaf":
            x = float(len(leaves))
            leaves.append(node)
            node["_xy"] = (x, -depth)
            return x
        xs = [layout(c, depth + 1) for c in node["children"]]
        node["_xy"] = (sum(xs) / len(xs), -depth)
        return node["_xy"][0]

    root = _copy(t["root"])
    layout(root, 0)
    width = max(len(leaves), 1)
    fig, ax = plt.subplots(figsize=(min(2.0 + 1.6 * width, 24), 1.5 + 1.4 * _depth(root)))

    def branch_labels(node: dict) -> list[str]:
        spec = attrs[node["attribute"]] if node["attribute"] < len(attrs) else {}
        bins = spec.get("bins")
        if not bins:
            return [str(v) for v in range(len(node["children"]))]
        return [f"bin {v}" for v in range(len(node["children"]))]

    def draw(node: dict) -> None:
        x, y = node["_xy"]
        if node["kind"] == "leaf":
            counts = ", ".join(f"{classes[i]:g}: {c:.0f}" for i, c in enumerate(node["counts"]))
            ax.text(x, y, f"class {classes[node['class']]:g}\n{counts}", ha="center",
                    va="center", fontsize=7,
                    bbox=dict(boxstyle="round", fc="#e8f0e0", ec="#6a8f4a"))
            return
        for lab, child in zip(branch_labels(node), node["children"]):
            cx, cy = child["_xy"]
            ax.plot([x, cx], [y, cy], color="grey", lw=0.8, zorder=0)
            ax.text((x + cx) / 2, (y + cy) / 2, lab, fontsize=6, color="dimgrey",
                    ha="center", va="center", bbox=dict(fc="white", ec="none", pad=0.5))
            draw(child)
        ax.text(x, y, f"{node['name']}\n≈{node['count']:.0f} rows", ha="center", va="center",
                fontsize=7, bbox=dict(boxstyle="round", fc="#dde6f3", ec="#4c72b0"))

    draw(root)
    ax.set_xlim(-0.8, width - 0.2)
    ax.set_ylim(-_depth(root) - 0.6, 0.6)
    ax.axis("off")
    ax.set_title(_title(release, f"DP decision tree of '{t['label']}' (noisy counts)"),
                 fontsize=9)
    fig.tight_layout()
    return fig


def _copy(node: dict) -> dict:
    out = dict(node)
    if "children" in node:
        out["children"] = [_copy(c) for c in node["children"]]
    return out


def _depth(node: dict) -> int:
    if node["kind"] == "leaf":
        return 0
    return 1 + max(_depth(c) for c in node["children"])


def weights(model: Any, top: int = 30) -> Any:
    """The published weights of a classifier, the ``top`` largest in magnitude."""
    plt = _pyplot()
    w = np.asarray(model.w, dtype=np.float64)
    order = np.argsort(-np.abs(w))[:top]
    fig, ax = plt.subplots(figsize=(max(5, 0.3 * len(order) + 2), 4.5))
    x = np.arange(len(order))
    ax.bar(x, w[order], color=np.where(w[order] > 0, "#4c72b0", "#c44e52"))
    ax.set_xticks(x)
    ax.set_xticklabels([model.features[i] for i in order], rotation=60, ha="right",
                       fontsize=7)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel("weight")
    what = (f"DP classifier of '{model.label}': the {len(order)} largest of {len(w)} "
            f"weights")
    if model.guarantee is not None:
        ax.set_title(_title(model, what), fontsize=9)
    else:
        ax.set_title(f"{what}\neps = {model.epsilon:g}", fontsize=9)
    fig.tight_layout()
    return fig
