"""The governance room: the fleet's rules around an act, as pure decisions. The approval gate
(who may approve, signed decisions), consent and do-not-contact, the time cap, the fleet's kill
switch, the harness pool and the cost by phase, and what they add to a receipt.

The types these exchange through Temporal are the wire contract's (``landed.task``); this room
imports them and never the other way.
"""
