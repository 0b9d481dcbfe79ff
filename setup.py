# scrapyd-deploy builds its egg with `python setup.py bdist_egg`; everything is in pyproject.toml.
from setuptools import setup

setup()
