#!/usr/bin/python3
"""Checks a flame page's DOM as headless Chromium dumped it (--dump-dom) after the page's
script ran: the frames drawn (div.frame: label, left/width, row), the status line and the
search result, against expectations derived by hand from tests/tools/tools_workload.h.

Usage: flame_check.py <dom.html> <case>
"""
import html.parser
import re
import sys

H = "com.example.svc.Handler"
ALL = ["all", H + "1.method1", H + "2.method2", H + "4.method4", H + "5.method5",
       H + "3.method3", H + "6.method6", H + "1.method8", "libfake.so.native_function_3",
       H + "1.größe_22"]
# case -> (status text, frame labels, matched text, frames with the "match" class)
CASES = {
    "all": ("all: 12 samples", ALL, "", []),
    "checkout": ("/checkout: 5 samples",
                 ["all", H + "1.method1", H + "2.method2", H + "4.method4", H + "5.method5"], "",
                 []),
    "search": ("/search: 4 samples",
               ["all", H + "1.method1", H + "3.method3", H + "6.method6", H + "1.method8",
                "libfake.so.native_function_3"], "", []),
    "no-context": ("(no context): 2 samples", ["all", H + "1.method1", H + "1.größe_22"], "", []),
    "unset": ("(unset): 1 samples",
              ["all", H + "1.method1", H + "3.method3", H + "1.method8",
               "libfake.so.native_function_3"], "", []),
    "checkout-search": ("/checkout: 5 samples",
                        ["all", H + "1.method1", H + "2.method2", H + "4.method4",
                         H + "5.method5"], "matched: 3 samples (60.00%)", [H + "4.method4"]),
    # The selector itself: a script picks "/search" in the <select> and fires "change".
    "select-search": ("/search: 4 samples",
                      ["all", H + "1.method1", H + "3.method3", H + "6.method6",
                       H + "1.method8", "libfake.so.native_function_3"], "", []),
    # A click on Handler2.method2 (all samples): its ancestors stay as full-width rows, it takes
    # the whole width, and only its subtree is drawn.
    "zoom": ("all: 12 samples",
             ["all", H + "1.method1", H + "2.method2", H + "4.method4", H + "5.method5"], "", []),
    "zoom-reset": ("all: 12 samples", ALL, "", []),
    # Diff pages: before = samples 1-6, after = all 12 (write_tools_recording "before").
    "diff": ("all: before 6, after 12 samples", ALL, "", []),
    "diff-before-widths": ("all: before 6, after 12 samples",
                           [f for f in ALL if f != H + "1.größe_22"], "", []),
    "diff-checkout": ("/checkout: before 3, after 5 samples",
                      ["all", H + "1.method1", H + "2.method2", H + "4.method4", H + "5.method5"],
                      "", []),
}
# Diff pages: each frame's change of share (percentage points), derived by hand from the table.
CHANGES = {
    "diff": {"all": "0.00", H + "1.method1": "-8.33", H + "2.method2": "-8.33",
             H + "4.method4": "-8.33", H + "5.method5": "0.00", H + "3.method3": "-8.33",
             H + "6.method6": "-8.33", H + "1.method8": "0.00",
             "libfake.so.native_function_3": "0.00", H + "1.größe_22": "8.33"},
    # /checkout: before 1, 2, 3 (method4 x2, method5); after 1, 2, 3, 7, 11 (method4 x3,
    # method5 x2): method4 66.67% -> 60.00%, method5 33.33% -> 40.00%.
    "diff-checkout": {"all": "0.00", H + "1.method1": "0.00", H + "2.method2": "0.00",
                      H + "4.method4": "-6.67", H + "5.method5": "6.67"},
}
CHANGES["diff-before-widths"] = {k: v for k, v in CHANGES["diff"].items()
                                 if k != H + "1.größe_22"}


class Frames(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.frames, self.texts, self.current, self.span = [], {}, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and "frame" in attrs.get("class", "").split():
            style = dict(part.split(":", 1) for part in attrs["style"].split(";") if ":" in part)
            self.current = {"classes": attrs["class"].split(), "label": "",
                            "change": attrs.get("data-change"),
                            "left": float(style["left"].strip().rstrip("%")),
                            "width": float(style[" width"].strip().rstrip("%")),
                            "top": int(style[" top"].strip().rstrip("px"))}
        elif tag == "span" and attrs.get("id") in ("status", "matched"):
            self.span = attrs["id"]
            self.texts[self.span] = ""

    def handle_endtag(self, tag):
        if tag == "div" and self.current is not None:
            self.frames.append(self.current)
            self.current = None
        if tag == "span":
            self.span = None

    def handle_data(self, data):
        if self.current is not None:
            self.current["label"] += data
        elif self.span is not None:
            self.texts[self.span] += data


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    dom_path, case = sys.argv[1:3]
    status, labels, matched, matches = CASES[case]
    parser = Frames()
    parser.feed(open(dom_path, encoding="utf-8").read())
    frames = parser.frames
    if parser.texts.get("status") != status:
        fail("%s: status %r, want %r" % (case, parser.texts.get("status"), status))
    if sorted(f["label"] for f in frames) != sorted(labels):
        fail("%s: frames %r, want %r" % (case, sorted(f["label"] for f in frames), sorted(labels)))
    if parser.texts.get("matched", "") != matched:
        fail("%s: matched %r, want %r" % (case, parser.texts.get("matched"), matched))
    marked = sorted(f["label"] for f in frames if "match" in f["classes"])
    if marked != sorted(matches):
        fail("%s: highlighted %r, want %r" % (case, marked, matches))
    by_label = {f["label"]: f for f in frames}
    changes = {f["label"]: f["change"] for f in frames if f["change"] is not None}
    if changes != CHANGES.get(case, {}):
        fail("%s: changes %r, want %r" % (case, changes, CHANGES.get(case, {})))
    # Geometry: the root spans the width; a child lies inside its parent, one row below.
    if by_label["all"]["left"] != 0 or by_label["all"]["width"] != 100:
        fail("%s: root frame is not full width" % case)
    if case == "zoom":
        method2 = by_label[H + "2.method2"]
        if (method2["left"], method2["width"], method2["top"]) != (0, 100, 34):
            fail("zoom: Handler2.method2 at %r, want full width in row 3" % method2)
        # method4 has 3 of method2's 5 samples, method5 2 (children in name order).
        if abs(by_label[H + "4.method4"]["width"] - 60) > 0.01 or \
                abs(by_label[H + "5.method5"]["left"] - 60) > 0.01:
            fail("zoom: children of Handler2.method2 misplaced: %r" % frames)
    if case == "all":
        # method1 holds 11 of 12 samples (the empty stack has none); method2 5 of 12.
        if abs(by_label[H + "1.method1"]["width"] - 100 * 11 / 12) > 0.01 or \
                abs(by_label[H + "2.method2"]["width"] - 100 * 5 / 12) > 0.01:
            fail("all: widths %r" % frames)
    print("ok: %s: %d frames, %s" % (case, len(frames), status))


if __name__ == "__main__":
    main()
