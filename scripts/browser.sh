#!/usr/bin/env bash
# Installs the browser the status-page test drives: Debian's Chromium (headless, via chromedp).
#   scripts/browser.sh install    no-op when chromium is already on PATH
set -euo pipefail
case "${1:-}" in
  install)
    if command -v chromium >/dev/null 2>&1 || [[ -n "${MEDALLION_CHROMIUM:-}" ]]; then
      exit 0
    fi
    echo "browser.sh: installing Debian's chromium for the status page test" >&2
    if [[ "$(id -u)" == 0 ]]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >&2
    command -v chromium >/dev/null 2>&1 || { echo "browser.sh: chromium did not install" >&2; exit 1; }
    ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
