#!/usr/bin/env python3
"""Draws a flame graph (an SVG file) from folded stacks.

A flame graph shows where a program spends its time: each box is a function,
as wide as the share of samples in which it was on the stack, drawn on top of
the function that called it. The root is at the bottom; callees of the same
caller are sorted by name from left to right, so the x axis is not time.
Hover over a box in a browser to see its name, samples and share.

Profile a command with perf and draw its flame graph:

    perf record -F 499 --call-graph dwarf -o perf.data -- CMD
    perf script -i perf.data \\
        -s /usr/lib/perf-core/scripts/python/stackcollapse.py > folded.txt
    python3 scripts/flamegraph.py folded.txt --out flame.svg

The input has one stack per line, `frame1;frame2;...;frameN COUNT`, the
caller first and COUNT (an integer) last; frames may contain spaces. Blank
lines are skipped and identical stacks are added together. Read from a file,
or from standard input with `-`.

Useful options:
  --strip-prefix 1            drop the process-name frame perf puts first
  --rename '\\[unknown\\]=JIT code'
                              rename frames (a regular expression, applied
                              to each frame before stacks are merged;
                              write `\\=` for an `=` inside the pattern)
  --top 10                    also print the 10 frames with the most self
                              samples (the frame was the innermost one)
  --min-width 0.5             leave out boxes narrower than 0.5 px

Exit status: 0 on success, 1 when the input holds no samples, 2 for a bad
line (its number is named) or a bad option. Needs only Python 3's standard
library; the SVG has no scripts and opens in any browser.
"""
import argparse
import hashlib
import math
import re
import sys
from xml.sax.saxutils import escape

# Geometry, in px. About 7 px per character at font-size 12 (Verdana-like).
FRAME_HEIGHT = 16
FONT_SIZE = 12
CHAR_WIDTH = 7
PAD_SIDE = 10
PAD_TOP = 56  # room for the title and the subtitle
PAD_BOTTOM = 10
MIN_LABEL_CHARS = 3  # fewer would be noise, not a name
ROOT_NAME = "all"

# Characters XML 1.0 forbids even when escaped; a stray byte in a symbol
# name must not make the whole file unreadable.
XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class BadInput(Exception):
    """A line that is not a folded stack, or an option that cannot work."""


class Node:
    """One frame in the merged call tree."""
    __slots__ = ("name", "total", "self_count", "children")

    def __init__(self, name):
        self.name = name
        self.total = 0       # samples with this frame on the stack here
        self.self_count = 0  # samples where it was the innermost frame
        self.children = {}

    def child(self, name):
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Node(name)
        return node


# ---------------------------------------------------------------- input

def parse_line(line, number):
    """(frames, count) of one folded line; BadInput naming the line if not."""
    parts = line.rsplit(None, 1)
    if len(parts) != 2 or not re.fullmatch(r"\d+", parts[1]):
        shown = line if len(line) <= 80 else line[:77] + "..."
        raise BadInput(f"line {number}: expected 'frame;frame;... COUNT', "
                       f"got {shown!r}")
    return parts[0].split(";"), int(parts[1])


def parse_rename(text):
    """PATTERN=REPLACEMENT to (compiled pattern, replacement)."""
    # Split at the first `=` not escaped as `\=`, so a pattern may hold one.
    parts = re.split(r"(?<!\\)=", text, maxsplit=1)
    if len(parts) != 2 or not parts[0]:
        raise BadInput(f"--rename {text!r}: expected PATTERN=REPLACEMENT")
    try:
        return re.compile(parts[0]), parts[1]
    except re.error as e:
        raise BadInput(f"--rename {text!r}: bad pattern: {e}") from None


class Renamer:
    """Applies the --rename rules in order, remembering each frame's result
    (real profiles repeat the same few thousand names many times)."""

    def __init__(self, rules):
        self.rules = rules
        self.cache = {}

    def __call__(self, frame):
        out = self.cache.get(frame)
        if out is None:
            out = frame
            for pattern, replacement in self.rules:
                try:
                    out = pattern.sub(replacement, out)
                except re.error as e:  # e.g. \2 with one group
                    raise BadInput(f"--rename {pattern.pattern!r}="
                                   f"{replacement!r}: {e}") from None
            self.cache[frame] = out
        return out


def read_stacks(lines, rename, strip_prefix):
    """{tuple of frames: count}, identical stacks (after renaming) summed."""
    stacks = {}
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        frames, count = parse_line(line, number)
        key = tuple(rename(f) for f in frames[strip_prefix:])
        stacks[key] = stacks.get(key, 0) + count
    return stacks


def build_tree(stacks):
    """The call tree under a root that counts every sample. A stack left
    empty by --strip-prefix still counts in the root, so shares stay shares
    of the whole profile."""
    root = Node(ROOT_NAME)
    for frames, count in stacks.items():
        node = root
        node.total += count
        for frame in frames:
            node = node.child(frame)
            node.total += count
        node.self_count += count
    return root


# ---------------------------------------------------------------- layout

def layout(root, plot_width, min_width):
    """(node, x, depth, width) for each box to draw, parents before their
    children; children in name order, as flamegraph.pl draws them. A box
    narrower than min_width is dropped with everything above it; the second
    result is how many boxes were dropped that way."""
    scale = plot_width / root.total
    boxes, dropped = [], 0
    todo = [(root, 0.0, 0)]
    while todo:
        node, x, depth = todo.pop()
        width = node.total * scale
        if width < min_width:
            dropped += 1
            continue
        boxes.append((node, x, depth, width))
        placed = []
        for name in sorted(node.children):
            child = node.children[name]
            placed.append((child, x, depth + 1))
            x += child.total * scale
        todo.extend(reversed(placed))  # so the file reads left to right
    return boxes, dropped


def share(count, total):
    """A percentage with one decimal, more for small shares so that they do
    not all read as 0.0%."""
    p = 100.0 * count / total
    decimals = 1 if p <= 0 else max(1, -math.floor(math.log10(p)))
    return f"{p:.{decimals}f}%"


def label(name, width):
    """The text that fits in a box `width` px wide: the name, the name cut
    short with "..", or nothing when not even a few characters fit."""
    chars = int(width / CHAR_WIDTH)
    if chars < MIN_LABEL_CHARS:
        return ""
    if len(name) <= chars:
        return name
    return name[:chars - 2] + ".."


def colour(name):
    """A warm colour that depends only on the name, so that a function keeps
    its colour from one graph to the next (md5, not hash(): Python salts
    hash() per process)."""
    d = hashlib.md5(name.encode("utf-8", "replace")).digest()
    v1, v2, v3 = (b / 255.0 for b in d[:3])
    return f"rgb({205 + int(50 * v3)},{int(230 * v1)},{int(55 * v2)})"


# ---------------------------------------------------------------- SVG

def xml_text(text):
    """Text safe inside an element or a double-quoted attribute."""
    text = XML_INVALID.sub("\ufffd", text)
    return escape(text, {'"': "&quot;"})


def svg_header(width, height, title, subtitle):
    return [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        '<defs><linearGradient id="background" x1="0" y1="0" x2="0" y2="1">'
        '<stop offset="5%" stop-color="#eeeeee"/>'
        '<stop offset="95%" stop-color="#eeeeb0"/></linearGradient></defs>',
        "<style>text { font-family: Verdana, sans-serif; "
        f"font-size: {FONT_SIZE}px; fill: #000; }} "
        ".title { font-size: 17px; } .subtitle { fill: #555; } "
        ".frame:hover rect { stroke: #000; stroke-width: 0.5; }</style>",
        f'<rect x="0" y="0" width="{width}" height="{height}" '
        'fill="url(#background)"/>',
        f'<text class="title" x="{width / 2:.1f}" y="24" '
        f'text-anchor="middle">{xml_text(title)}</text>',
        f'<text class="subtitle" x="{width / 2:.1f}" y="44" '
        f'text-anchor="middle">{xml_text(subtitle)}</text>',
    ]


def svg_box(node, x, y, width, total):
    """One frame: a <g> holding its tooltip, its box and its label."""
    tip = f"{node.name} ({node.total} samples, {share(node.total, total)})"
    parts = [f'<g class="frame"><title>{xml_text(tip)}</title>',
             f'<rect x="{x:.2f}" y="{y}" width="{width:.2f}" '
             f'height="{FRAME_HEIGHT - 1}" rx="2" ry="2" '
             f'fill="{colour(node.name)}"/>']
    text = label(node.name, width)
    if text:
        parts.append(f'<text x="{x + 3:.2f}" y="{y + FRAME_HEIGHT - 4}">'
                     f"{xml_text(text)}</text>")
    parts.append("</g>")
    return "".join(parts)


def render(root, width, min_width, title):
    """The whole SVG document as a string."""
    boxes, dropped = layout(root, width - 2 * PAD_SIDE, min_width)
    depth = max(d for _, _, d, _ in boxes) + 1
    height = PAD_TOP + depth * FRAME_HEIGHT + PAD_BOTTOM
    subtitle = f"{root.total} samples"
    if dropped:
        subtitle += (f"; {dropped} frames narrower than {min_width:g} px "
                     "(and what they called) left out")
    out = svg_header(width, height, title, subtitle)
    base = height - PAD_BOTTOM  # the root sits on the bottom edge
    for node, x, d, w in boxes:
        y = base - (d + 1) * FRAME_HEIGHT
        out.append(svg_box(node, PAD_SIDE + x, y, w, root.total))
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- report

def self_counts(root):
    """{frame name: samples where it was the innermost frame}, summed over
    every place in the tree the name appears. The root is not a frame."""
    counts = {}
    todo = list(root.children.values())
    while todo:
        node = todo.pop()
        if node.self_count:
            counts[node.name] = counts.get(node.name, 0) + node.self_count
        todo.extend(node.children.values())
    return counts


def top_table(root, k):
    """The k frames with the most self samples, most first, as text."""
    ranked = sorted(self_counts(root).items(), key=lambda kv: (-kv[1], kv[0]))
    lines = [f"top {k} frames by self samples (of {root.total}):",
             f"{'self':>10}  {'share':>7}  frame"]
    for name, count in ranked[:k]:
        lines.append(f"{count:>10}  {share(count, root.total):>7}  {name}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main

def non_negative(kind):
    def convert(text):
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text} is negative")
        return value
    return convert


def positive_int(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not positive")
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="flamegraph.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", nargs="?", default="-",
                   help="folded stacks, or - for standard input (default)")
    p.add_argument("--out", default="-",
                   help="SVG file to write (default: standard output)")
    p.add_argument("--width", type=positive_int, default=1200,
                   help="image width in px (default 1200)")
    p.add_argument("--title", default="Flame graph",
                   help='title at the top (default "Flame graph")')
    p.add_argument("--min-width", type=non_negative(float), default=0.1,
                   help="leave out boxes narrower than this, in px "
                        "(default 0.1)")
    p.add_argument("--rename", action="append", default=[],
                   metavar="PATTERN=REPLACEMENT",
                   help="regular-expression substitution on every frame, "
                        "before stacks are merged (repeatable; in order)")
    p.add_argument("--strip-prefix", type=non_negative(int), default=0,
                   metavar="N", help="drop the first N frames of each stack")
    p.add_argument("--top", type=non_negative(int), default=0, metavar="K",
                   help="also print the K frames with the most self samples "
                        "to standard error")
    args = p.parse_args(argv)
    if args.width <= 2 * PAD_SIDE:
        p.error(f"--width must be more than {2 * PAD_SIDE}")
    return args


def open_input(path):
    # Symbol names are not always valid UTF-8; keep going with U+FFFD.
    if path == "-":
        sys.stdin.reconfigure(encoding="utf-8", errors="replace")
        return sys.stdin
    return open(path, encoding="utf-8", errors="replace")


def write_output(path, text):
    if path == "-":
        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv=None):
    args = parse_args(argv)
    try:
        rename = Renamer([parse_rename(r) for r in args.rename])
    except BadInput as e:
        print(f"flamegraph.py: {e}", file=sys.stderr)
        return 2
    try:
        with open_input(args.input) as lines:
            stacks = read_stacks(lines, rename, args.strip_prefix)
    except BadInput as e:
        print(f"flamegraph.py: {args.input}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"flamegraph.py: {e}", file=sys.stderr)
        return 2
    root = build_tree(stacks)
    if root.total == 0:
        print(f"flamegraph.py: {args.input}: no samples", file=sys.stderr)
        return 1
    write_output(args.out, render(root, args.width, args.min_width,
                                  args.title))
    if args.top:
        sys.stderr.write(top_table(root, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
