#!/usr/bin/env python3
"""Prints a ctest -E regex naming the tests of a build tree whose program was not built.

A partial build (one that builds only some targets, as the sanitizer runs do) still
registers every test; running one whose program is missing fails as "Not Run". A
test's program is the first word of its command, or, when that is a wrapper (cmake -E
env, setarch), the first argument that lies inside the build tree. With no such test the regex matches nothing.
"""
import json
import os
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: ctest-unbuilt.py BUILD_DIR", file=sys.stderr)
        return 2
    build = os.path.realpath(sys.argv[1])
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    names = []
    for test in json.loads(out).get("tests", []):
        command = test.get("command")
        if not command:  # ctest leaves it out when the program itself is missing
            names.append("^" + re.escape(test["name"]) + "$")
            continue
        inside = [a for a in command
                  if os.path.isabs(a) and os.path.realpath(a).startswith(build + os.sep)]
        if inside and not os.path.exists(inside[0]):
            names.append("^" + re.escape(test["name"]) + "$")
    print("|".join(names) if names else "^$NOTHING^")
    return 0


if __name__ == "__main__":
    sys.exit(main())
