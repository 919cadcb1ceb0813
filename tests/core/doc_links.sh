# The README and the pages of doc/ link each other by relative paths and
# #anchors, which break silently when a page or a heading moves (issue 30
# moved most of the README into doc/). Every relative link of README.md,
# doc/*.md, SECURITY.md and bench/README.md must name a file of the tree,
# and its #anchor a heading of that page, as GitHub makes anchors: the
# heading's text in lower case, punctuation but - and _ dropped, spaces as
# -, a second heading of the same text -1. Links and headings inside code
# blocks do not count.
#
# DOC_LINKS_ROOT=DIR checks another checkout, to see the test fail.
. "$(dirname "$0")/../integration/lib.sh"

ROOT=${DOC_LINKS_ROOT:-$CPROF_SOURCE_DIR}
cd "$ROOT"
check "every relative link and #anchor resolves" python3 - README.md doc/*.md SECURITY.md bench/README.md <<'PY'
import os, re, sys

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")

def lines(path):
    fence = False
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            fence = not fence
        elif not fence:
            yield n, line

def slug(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text.strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")

anchors = {}
def anchors_of(path):
    if path not in anchors:
        seen = anchors[path] = set()
        for _, line in lines(path):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = k = slug(m.group(1))
                i = 0
                while k in seen:
                    i += 1
                    k = f"{s}-{i}"
                seen.add(k)
    return anchors[path]

bad = 0
for page in sys.argv[1:]:
    for n, line in lines(page):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                print(f"{page}:{n}: {target}: no such file", file=sys.stderr)
                bad += 1
            elif frag and dest.endswith(".md") and frag not in anchors_of(dest):
                print(f"{page}:{n}: {target}: no such heading in {dest}", file=sys.stderr)
                bad += 1
sys.exit(1 if bad else 0)
PY
finish
