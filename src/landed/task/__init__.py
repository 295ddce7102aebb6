"""The task room: the agent task as data (spec, messages between workflow and activities),
the act registry, and the pure decisions the workflow takes on them.
"""
