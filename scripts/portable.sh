# shellcheck shell=bash
# Helpers for scripts a contributor runs on Linux or macOS (sourced): no GNU-only flag.
#   sha256_of FILE        the file's SHA-256, lower-case hex (sha256sum, else shasum -a 256,
#                         else openssl)
#   relpath TARGET BASE   TARGET relative to BASE (python3; `realpath --relative-to` is GNU-only)
#   size_of FILE          the file's size in bytes (`stat -c` is GNU-only, `stat -f` BSD-only)

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        openssl dgst -sha256 -r "$1" | cut -d' ' -f1
    fi
}

relpath() {
    python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$1" "$2"
}

size_of() {
    wc -c <"$1" | tr -d ' '
}
