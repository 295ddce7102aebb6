#!/bin/sh
# landed dev whose runner judges claims by contracts.json (LANDED_RUNNER_CLAIM_CONTRACTS) and
# whose verifier reads shop/orders.db (its source shop-db). Extra options go to landed dev.
set -e
cd "$(dirname "$0")"
mkdir -p shop
python3 -c "import sqlite3; sqlite3.connect('shop/orders.db').execute(
    'create table if not exists orders (batch text, line integer)')"
export LANDED_RUNNER_CLAIM_CONTRACTS="$PWD/contracts.json"
export LANDED_SOURCES__SHOP_DB__URL="sqlite:///$PWD/shop/orders.db"
exec landed dev "$@"
