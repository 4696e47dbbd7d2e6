"""EmoStream on a Ray Serve cluster (README "Cluster"; the ``[ray]`` extra).

* :mod:`~emostream.cluster.deploy`: the Serve application (ingress + model deployments,
  autoscaling, the degradation policy) and ``emostream serve --ray``;
* :mod:`~emostream.cluster.ray_runner`: the ingress's :class:`~emostream.engine.runner.Runner`
  (``engine=ray``): every model call of a stream to one model replica;
* :mod:`~emostream.cluster.model`: the model replica (the device's own runner behind it);
* :mod:`~emostream.cluster.affinity`: Serve's router, told to keep a stream's calls on its
  replica;
* :mod:`~emostream.cluster.ops`: per-replica and aggregated health and metrics.

Ray is imported only by these modules; the server's core never imports this package unless
``engine=ray``.
"""
