"""`ocrserve keys add NAME | list | remove NAME`: API keys in the keys file.

`add` prints the new key once, on stdout alone (so `KEY=$(ocrserve keys add me)`
works); only its SHA-256 is stored. The file is OCRSERVE_API_KEYS_FILE, or
api-keys in the data directory. Both `add` and `remove` replace the file whole
(temp file, fsync, rename; mode 0600), so a running API never reads it half-written.
"""
from __future__ import annotations

import argparse
import sys

from app.api_keys import KeysFileError, add_key, read_keys_file, remove_key
from workers.settings import Settings

SUMMARY = "manage API keys: add NAME (prints the key once), list, remove NAME"


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="{add,list,remove}")
    add = actions.add_parser("add", help="make a key, store its hash, print the key once")
    add.add_argument("name", help="a label for the key (letters, digits, '_', '.', '-')")
    actions.add_parser("list", help="names of the stored keys")
    remove = actions.add_parser("remove", help="revoke a key by name")
    remove.add_argument("name")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("keys", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def main(args: argparse.Namespace) -> int:
    keys_file = Settings().keys_file
    try:
        if args.action == "add":
            key = add_key(keys_file, args.name)
            print(key)
            print(f"ocrserve keys: added {args.name!r} to {keys_file}; the key is shown only this once "
                  f"(an API started without keys requires them after a restart)", file=sys.stderr)
        elif args.action == "list":
            for entry in read_keys_file(keys_file):
                print(entry.name)
        else:
            if not remove_key(keys_file, args.name):
                print(f"ocrserve keys: no key named {args.name!r} in {keys_file}", file=sys.stderr)
                return 1
    except KeysFileError as exc:
        print(f"ocrserve keys: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("keys")
