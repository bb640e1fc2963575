"""The condition expressions of ``DynamoStore``, each with the race it prevents.

A failed condition is an expected outcome (a lost race), answered with the
stored item where the caller needs the winner.
"""

# A concurrent admit must not push a bucket past its limit: check and increment are one write.
UNDER_LIMIT = "attribute_not_exists(#requests) OR #requests < :limit"
# Concurrent reservations must not together pass a tpm limit: room is limit - this reservation.
TOKENS_FIT = "attribute_not_exists(#reserved) OR #reserved <= :room"
# Two instances creating the same item must not both succeed (first circuit, first binding).
ITEM_ABSENT = "attribute_not_exists(#pk)"
# Two instances that decided from the same circuit version must not both commit a transition.
VERSION_UNCHANGED = "#version = :expected"
# A late, shorter Retry-After must not cut a longer throttle of the same failure domain short.
THROTTLE_SHORTER = "attribute_not_exists(#until) OR #until < :until"
# A renewal must not overwrite a binding another instance re-pointed or recreated meanwhile.
BINDING_UNCHANGED = "#deployment = :deployment AND #version = :expected"
# Two attempts must never hold one capacity slot: a slot is taken only while free or lapsed.
SLOT_FREE = "attribute_not_exists(#holder) OR #until < :now"
# A late release must not free a slot that lapsed and another attempt has taken since.
SLOT_HELD_BY = "#holder = :holder"
# A delete after a failure must not drop a binding another instance already re-pointed.
BINDING_NAMES = "#deployment = :deployment"

# -- the operator plane (``dynamo_config``, ``dynamo_jobs``, ``dynamo_audit``) --------------

# Two first loads of a configuration must not both succeed: the second must read the first.
CONFIG_ABSENT = "attribute_not_exists(#version)"
# Two admins editing from the same version must not both commit: the second gets 409 and re-reads.
CONFIG_UNCHANGED = "#version = :expected"
# An audit entry must never replace another (its sort key holds a random id: a bug, not a race).
AUDIT_ABSENT = "attribute_not_exists(#pk)"
# An operator's change to a never-written circuit must not overwrite the first one a request wrote.
CIRCUIT_ABSENT = "attribute_not_exists(#pk)"
# An operator's change must not overwrite a transition a request (or operator) made since the read.
CIRCUIT_UNCHANGED = "#version = :expected"
# A rotation's new secret must never take over an item that exists (a digest collision: a bug).
ROTATION_ITEM_ABSENT = "attribute_not_exists(#pk)"
# Two admins changing a never-updated key from the same read must not both commit.
KEY_FIRST_VERSION = "attribute_exists(#pk) AND attribute_not_exists(#version)"
# Two admins changing a key from the same version must not both commit: the second re-reads.
KEY_UNCHANGED = "#version = :expected"
# Retiring a previous secret must not recreate a secret item deleted meanwhile as an empty item.
RETIRED_ITEM_EXISTS = "attribute_exists(#pk)"

# -- idempotency leases (``dynamo_leases``) --------------------------------------------------

# A lease is taken only when none is stored, its record expired (TTL deletion is lazy), or it
# still runs past its lease (its owner died); a finished lease is never replaced before expiry.
# Two calls with one Idempotency-Key must not both execute.
LEASE_TAKEABLE = (
    "attribute_not_exists(#pk) OR #ttl <= :now OR (#state = :running AND #lease <= :now)"
)
# A call whose lease lapsed and was taken over must not finish or delete its successor's lease.
LEASE_HELD_BY = "#owner = :owner AND #state = :running"
