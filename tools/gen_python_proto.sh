#!/usr/bin/env bash
# Generates the Python protocol stubs into client/python/tensord/_proto/ (gitignored) so that
# `import tensord` works from the checkout with PYTHONPATH=client/python.
# Usage: tools/gen_python_proto.sh   (PYTHON overrides the interpreter; default /usr/bin/python3)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "${PYTHON:-/usr/bin/python3}" "${root}/client/python/gen_proto.py" \
  --proto_dir "${root}/proto" --out_dir "${root}/client/python/tensord/_proto"
