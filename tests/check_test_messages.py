#!/usr/bin/env python3
"""A doctest message is built on success too when asserts are shown (`-s`): a message that
calls .error() on a Result that may be ok threw std::bad_variant_access there
(cluster_state_test.cc). Every *_MESSAGE, INFO and CAPTURE whose text calls .error() must
guard it (`r.ok() ? "" : r.error().message`)."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
macro = re.compile(r"\b(?:REQUIRE|CHECK|WARN)(?:_FALSE)?_MESSAGE\s*\(|\b(?:INFO|CAPTURE)\s*\(")
bad = []
for path in sorted(root.rglob("*_test.cc")):
    if "build" in path.relative_to(root).parts:
        continue
    text = path.read_text(errors="replace")
    for m in macro.finditer(text):
        i, depth = m.end(), 1
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        call = text[m.start():i]
        if ".error()" in call and "ok() ?" not in call:
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{path.relative_to(root)}:{line}: {' '.join(call.split())}")
if bad:
    print("FAIL: messages that call .error() on a Result that may be ok (doctest -s throws):")
    print("\n".join(bad))
    sys.exit(1)
print("ok: no test message calls .error() unguarded")
