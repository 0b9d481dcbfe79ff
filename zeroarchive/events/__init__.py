"""Events: what was taken down, restored or quietly changed, and the long-tail watch that
keeps looking at old articles after their snapshot plan ends.

``signs`` decides, per answer, whether a page is gone (404/410, a redirect to the front
page or a list page, a soft 404 against the site's ``probe``, a removal notice from
``notices``, a platform's own sign); ``store`` turns confirmed signs, restorations and
publication edits (``diff``) into ``ArticleEvent`` rows and reads them back; ``watch``
hands out long-tail checks within each site's daily budget.

May import: ``storage``, ``sites``, ``sources``, ``core``.
Never imported by: ``storage``, ``sites``, ``sources`` or ``core``. The crawl's pipeline
and the parser's version hook call it through narrow functions.
"""
