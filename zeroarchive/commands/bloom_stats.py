from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.services import one_line_errors
from zeroarchive.distributed.redis_client import reachable

if TYPE_CHECKING:
    from zeroarchive.distributed.redis_bloom import BloomEstimate


def _print(title: str, est: BloomEstimate) -> None:
    s = est.shape
    print(title)
    print(f"  capacity             {s.capacity}")
    print(f"  configured FP rate   {s.error_rate:g}")
    print(f"  bits                 {s.bits} in {s.keys} key(s), {s.hashes} hashes")
    print(f"  bits set             {est.bits_set} ({est.bits_set / s.bits:.2%})")
    print(f"  estimated items      {est.items:.0f}")
    print(f"  estimated FP rate    {est.false_positive_rate:.3g}")
    print(f"  redis memory         {est.memory_bytes} bytes")
    if est.overfull:
        print("  WARNING: past twice the configured rate; raise BLOOMFILTER_CAPACITY")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--spider NAME]"

    def short_desc(self) -> str:
        return "Show the size and estimated false-positive rate of a spider's Bloom dupefilter"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--spider", default="generic", help="spider name (default generic)")

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError("bloom_stats takes no arguments")
        assert self.settings is not None
        # Imported here: Scrapy loads every command module on every `scrapy` call, and
        # the filter's numpy would slow all of them.
        from zeroarchive.distributed.dupefilter import BloomConfig
        from zeroarchive.distributed.redis_bloom import RedisBloom, iter_list_keys, shape_key_of

        try:
            config = BloomConfig.from_settings(self.settings)
        except Exception as exc:
            print(f"error: {exc}")
            self.exitcode = 1
            return
        server = reachable(self.settings, config.redis_url)
        base = config.base_key(opts.spider)
        try:
            if not server.exists(shape_key_of(base)):
                print(f"Bloom filter {base}: not created yet (no crawl has used it)")
                print(f"  capacity             {config.capacity} (configured)")
                return
            bloom = RedisBloom.open(server, base, config.shape())
            _print(f"Bloom filter {base}", bloom.estimate())
            for key in sorted(iter_list_keys(server, base)):
                if key.count(":") == base.count(":") + 2:  # not a split key's ":<n>" part
                    rounds = RedisBloom(server, key, config.list_shape())
                    _print(f"List round {key} (expires in {server.ttl(key)} s)", rounds.estimate())
        finally:
            server.close()
