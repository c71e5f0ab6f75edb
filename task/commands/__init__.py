"""One module per `rollguard` subcommand; each has ``register(subparsers)``.

Modules import their heavy dependencies inside the handler, so `rollguard --help` stays fast.
"""
