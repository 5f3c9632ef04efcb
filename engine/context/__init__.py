"""The context builder (data-transfer-protocol.zh.md, agent-data-message.ru.md).

Plain data and callables in, a `ContextAssembly` out: what each data reference resolved
to, how it was passed and why, every resolution failure, and the §7.2 record.
"""
