"""Message-passing encoders (paper §4.1): each layer registers itself in
:data:`~plnlp_core.nn.encoders.registry.ENCODERS`; :class:`GNNEncoder`
stacks them."""
