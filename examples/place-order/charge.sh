#!/bin/sh
# charge-card: charge for the reserved items (4.50 each), naming who approved
# the order (the approval step's output is the signal's payload).
set -eu
jq -c '{charged: (.outputs["reserve-stock"].reserved * 4.5),
        approved_by: .outputs.approval.by}'
