#!/usr/bin/python3
"""Reads one rule from `bazel query --output=build` on stdin; prints how `bazel test` would run
it: its `env` attribute as shell assignments, the ASCII unit separator (0x1f), its `args` as
shell words, each quoted. tools/make_bundle.sh writes them into the bundle's run_tests.sh."""

import ast
import re
import shlex
import sys


def attr(rule: str, name: str, open_: str, close: str):
    m = re.search(rf"^\s*{name} = (\{open_}.*?\{close}),?$", rule, re.M | re.S)
    return ast.literal_eval(m.group(1)) if m else None


def main() -> None:
    rule = sys.stdin.read()
    env = attr(rule, "env", "{", "}") or {}
    args = attr(rule, "args", "[", "]") or []
    print(" ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + "\x1f"
          + " ".join(shlex.quote(a) for a in args))


if __name__ == "__main__":
    main()
