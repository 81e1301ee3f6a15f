#!/bin/sh
# notify: tell the customer (here: a line on standard error, which the worker
# logs) and record who was told.
set -eu
in=$(cat)
email=$(printf '%s\n' "$in" | jq -r '.input.email')
tracking=$(printf '%s\n' "$in" | jq -r '.outputs.ship.tracking')
echo "notify: mailing $email: your order is on its way ($tracking)" >&2
printf '%s\n' "$in" | jq -c '{notified: .input.email, tracking: .outputs.ship.tracking}'
