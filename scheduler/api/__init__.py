"""The internal object model: small typed objects parsed from API JSON.

Nothing in this package imports the kubernetes client; hot paths read these objects only.
"""
