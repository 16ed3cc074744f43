#!/usr/bin/env bash
# A learner's checkout: the repository as `git archive` exports it, which leaves out
# what .gitattributes marks export-ignore (labs/instructor/: the labs' answers and wrong
# answers). `make course DEST=dir` runs this; the course is what a teacher hands out.
set -euo pipefail
dest=${1:?usage: course_checkout.sh DEST}
cd "$(dirname "$0")/.."
if [ -e "$dest" ] && [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
    echo "make course: $dest is not empty" >&2
    exit 2
fi
mkdir -p "$dest"
git archive --format=tar HEAD | tar -x -C "$dest"
echo "make course: a learner's checkout of $(git rev-parse --short HEAD) in $dest (no labs/instructor/)"
