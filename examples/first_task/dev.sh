#!/bin/sh
# landed dev with this folder's act: the actor may write shop/orders.db (its credential
# shop-db), the verifier may read it (its source shop-db). Extra options go to landed dev.
set -e
cd "$(dirname "$0")"
mkdir -p shop
python3 -c "import sqlite3; sqlite3.connect('shop/orders.db').execute(
    'create table if not exists orders (batch integer, line integer)')"
db="sqlite:///$PWD/shop/orders.db"
export LANDED_ACTOR_ACTS=shop_acts
export LANDED_ACTOR_CREDENTIALS="{\"shop-db\": \"$db\"}"
export LANDED_SOURCES__SHOP_DB__URL="$db"
exec landed dev "$@"
