"""The ``scrapy`` commands (``COMMANDS_MODULE``): each parses its arguments and calls the
package that does the work.

May import: every package. Never imported by any: the top of the house.
"""
