#!/bin/sh
# landed dev with this folder's act and a tiny CMS on loopback: the actor publishes with its
# credential cms (a bearer token), the verifier reads pages back through its source cms.
# Extra options go to landed dev.
set -e
cd "$(dirname "$0")"
rm -f cms.port
python3 cms.py --port-file cms.port --token example-token --drop spring-sale &
while [ ! -s cms.port ]; do sleep 0.1; done
cms="127.0.0.1:$(cat cms.port)"
export LANDED_ACTOR_ACTS=publish_acts
export LANDED_ACTOR_CREDENTIALS="{\"cms\": \"http://:example-token@$cms\"}"
export LANDED_SOURCES__CMS__URL="http://$cms"
exec landed dev "$@"
