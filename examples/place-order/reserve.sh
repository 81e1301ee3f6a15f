#!/bin/sh
# reserve-stock: reserve the order's items of its SKU.
set -eu
jq -c '{reserved: .input.items, sku: .input.sku}'
