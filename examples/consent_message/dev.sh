#!/bin/sh
# landed dev with this folder's message act: the actor sends through outbox/outbox.db (its
# credential outbox), the verifier reads it back (its source outbox) and, before any contact,
# reads consent.json (its source crm, a consent file). Extra options go to landed dev.
set -e
cd "$(dirname "$0")"
mkdir -p outbox
python3 -c "import sqlite3; sqlite3.connect('outbox/outbox.db').execute(
    'create table if not exists sent (recipient text, body text)')"
db="sqlite:///$PWD/outbox/outbox.db"
export LANDED_ACTOR_ACTS=message_acts
export LANDED_ACTOR_CREDENTIALS="{\"outbox\": \"$db\"}"
export LANDED_SOURCES__OUTBOX__URL="$db"
export LANDED_SOURCES__CRM__KIND=file
export LANDED_SOURCES__CRM__PATH="$PWD/consent.json"
exec landed dev "$@"
