"""The request path's condition expressions, each with the race it prevents.

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
# A delete after a failure must not drop a binding another instance already re-pointed.
BINDING_NAMES = "#deployment = :deployment"
