"""The receipts room: the DoD receipt, its ladder, grading, scorecard, intake and the checker.

Pure code: it imports no other room of landed.
"""
