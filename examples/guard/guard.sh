#!/bin/sh
# landed guard on what examples/first_task creates: every contract in contracts.jsonl is read
# again now from ../first_task/shop/orders.db (the source shop-db). Exit 0 all landed, 2 blocked.
# Extra options go to landed guard.
set -e
cd "$(dirname "$0")"
export LANDED_SOURCES__SHOP_DB__URL="sqlite:///$(cd ../first_task && pwd)/shop/orders.db"
exec landed guard --contracts contracts.jsonl "$@"
