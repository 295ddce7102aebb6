#!/bin/sh
# landed dev with this folder's feed acts: the actor imports from the upstream table into
# orders (its credential shop-db), the verifier reads orders back (its source shop-db).
# Extra options go to landed dev.
set -e
cd "$(dirname "$0")"
mkdir -p shop
python3 -c "import sqlite3; c = sqlite3.connect('shop/orders.db'); c.executescript('''
    create table if not exists orders (batch text, line integer);
    create table if not exists upstream (line integer);''')"
db="sqlite:///$PWD/shop/orders.db"
export LANDED_ACTOR_ACTS=feed_acts
export LANDED_ACTOR_CREDENTIALS="{\"shop-db\": \"$db\"}"
export LANDED_SOURCES__SHOP_DB__URL="$db"
exec landed dev "$@"
