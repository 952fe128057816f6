"""A learned generation order: the strategy, its policy network, and `bench train order`."""
