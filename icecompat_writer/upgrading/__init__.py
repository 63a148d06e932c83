"""Upgrading existing Delta tables to a profile: ``upgrade_table`` (Spark, one commit) and
``plan_upgrade`` (what it would do, without Spark). See ``docs/upgrade.md``."""

from __future__ import annotations

from icecompat_writer.errors import UpgradeRefused
from icecompat_writer.upgrading.api import UpgradeResult, upgrade_table
from icecompat_writer.upgrading.plan import FileRewrite, UpgradePlan, plan_upgrade

__all__ = ["FileRewrite", "UpgradePlan", "UpgradeRefused", "UpgradeResult", "plan_upgrade", "upgrade_table"]
