#!/bin/sh
# plot.sh CHARTS.json OUTDIR: plot.py under a Python that has matplotlib (Debian's
# python3-matplotlib lives in /usr/bin/python3, whatever python3 comes first on PATH), else
# under any python3 with gnuplot.
here=$(cd "$(dirname "$0")" && pwd)
for py in /usr/bin/python3 python3; do
  if "$py" -c 'import matplotlib' >/dev/null 2>&1; then
    exec "$py" "$here/plot.py" "$@"
  fi
done
exec python3 "$here/plot.py" "$@"
