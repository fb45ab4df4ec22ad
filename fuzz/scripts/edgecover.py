#!/usr/bin/env python3
"""Greedy set cover over the coverage edges (COV lines) of a libFuzzer merge control file;
ties go to smaller files. Usage: edgecover.py CONTROL OUTDIR"""
import sys, os, shutil
ctl, out = sys.argv[1], sys.argv[2]
lines = open(ctl).read().split('\n')
n = int(lines[0]); files = lines[2:2 + n]
cov = {}; size = {}
for line in lines[2 + n:]:
    parts = line.split()
    if not parts: continue
    if parts[0] == 'STARTED': size[int(parts[1])] = int(parts[2])
    elif parts[0] == 'COV': cov[int(parts[1])] = set(parts[2:])
covered = set(); chosen = []
remaining = {i: c for i, c in cov.items() if c}
while True:
    best = None; gain = 0
    for i, c in remaining.items():
        g = len(c - covered)
        if g > gain or (g == gain and g > 0 and size.get(i, 0) < size.get(best, 0)):
            best, gain = i, g
    if best is None or gain == 0: break
    covered |= remaining.pop(best); chosen.append(best)
os.makedirs(out, exist_ok=True)
for i in chosen: shutil.copy(files[i], out)
print(f'{len(chosen)} files, {sum(size[i] for i in chosen)} bytes, {len(covered)} edges')
