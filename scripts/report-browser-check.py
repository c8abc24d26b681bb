#!/usr/bin/env python3
"""Render a results folder's report.html in headless Chromium and check what a reader sees.

    scripts/report-browser-check.py RESULTS_DIR [--chromium PATH] [--width PX ...]

At each window width (1280 and 800 px by default) the page is loaded from its folder, as a
reader opens it, with a small script appended to a copy of it that measures, once the page has
loaded: whether anything makes the page wider than the window (a figure or table sticking out;
a wide table may scroll inside its own box), whether every figure's drawing has a size, and
whether every image loaded. Every link to a file of the folder (plots/*.svg) must exist. The
script prints what it found and exits 1 on any failure (2 when Chromium cannot run).

Chromium's flags are those that start it headless, as root, on a machine without a network.
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = """
<script>
window.addEventListener('load', () => {
  const width = document.documentElement.clientWidth;
  const over = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    // A wide table scrolls inside its own box, which the page does not widen.
    if (r.width > 0 && r.right > width + 1 && !el.parentElement.closest('.wide')) {
      over.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(r.right) + 'px');
    }
  }
  const figures = [...document.querySelectorAll('figure')];
  const blank = figures.filter(f => {
    const d = f.querySelector('svg, img');
    return !d || d.getBoundingClientRect().width < 50 || d.getBoundingClientRect().height < 50;
  }).map(f => f.id);
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src);
  const out = document.createElement('pre');
  out.id = 'browser-check';
  out.textContent = JSON.stringify({
    width, page: document.documentElement.scrollWidth, over: over.slice(0, 20),
    figures: figures.length, blank, broken,
  });
  document.body.appendChild(out);
});
</script>
"""

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--virtual-time-budget=10000", "--dump-dom",
]


def render(chromium, page, width):
    """The check's findings for `page` in a window `width` pixels wide."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},900",
             page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="browser-check">(.*?)</pre>', done.stdout, re.S)
    if not found:
        raise RuntimeError(f"the check did not run (exit {done.returncode}): {done.stderr[-2000:]}")
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--width", type=int, action="append")
    args = ap.parse_args()
    report = args.results / "report.html"
    if not report.is_file():
        sys.exit(f"report-browser-check: no {report}")
    if not Path(args.chromium).exists():
        print(f"report-browser-check: no Chromium at {args.chromium} (apt-get install chromium)",
              file=sys.stderr)
        sys.exit(2)
    html = report.read_text()
    failures = []
    for href in sorted(set(re.findall(r'href="(plots/[^"#]+)"', html))):
        if not (args.results / href).is_file():
            failures.append(f"link to a missing file: {href}")
    # A copy beside the report, so that its relative links resolve as the report's do.
    copy = args.results / ".browser-check.html"
    copy.write_text(html.replace("</body>", CHECK + "</body>"))
    try:
        for width in args.width or [1280, 800]:
            try:
                seen = render(args.chromium, copy, width)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"report-browser-check: {e}", file=sys.stderr)
                sys.exit(2)
            print(f"{width} px: page {seen['page']} px wide, {seen['figures']} figure(s)")
            if seen["page"] > seen["width"]:
                failures.append(f"{width} px: the page is {seen['page']} px wide: "
                                + ", ".join(seen["over"]))
            if seen["figures"] == 0 and "<figure" in html:
                failures.append(f"{width} px: no figure rendered")
            for name in seen["blank"]:
                failures.append(f"{width} px: figure {name} has no drawing")
            for src in seen["broken"]:
                failures.append(f"{width} px: image {src} did not load")
    finally:
        copy.unlink(missing_ok=True)
    for f in failures:
        print(f"FAIL {f}")
    if failures:
        sys.exit(1)
    print(f"report-browser-check: {report} fits the window and every figure shows")


if __name__ == "__main__":
    main()
