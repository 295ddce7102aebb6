"""The probes room: completion contracts, expectations, one module per probe family, the
readings they return, the named sources they read and the policy of what a verifier reads.
"""
