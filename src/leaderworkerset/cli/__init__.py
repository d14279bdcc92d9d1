"""The ``lws`` command (``main``, also installed as ``kubectl-lws``); ``app`` is the typer application
every sub-command registers on, ``__main__`` runs it with ``python -m leaderworkerset.cli``.

* ``manager``, ``manager_process``, ``quickoptions`` — ``lws manager``: the command, the process (the
  runtime Manager with the controllers and webhooks) and its options, parsed without typer when plain;
* ``up`` — ``lws up``, the demo; ``cluster`` — ``lws cluster``, local control planes;
* ``status`` — ``lws status`` and its watch loop (what it shows is ``views/``);
* ``plan`` — ``lws plan``; ``rollout`` — ``lws rollout pause|resume|undo|history``;
* ``install`` — ``lws install`` and ``lws uninstall``; ``crds`` — ``lws crds`` and the kubeconfig options;
* ``deferredmodules`` — lightkube's generated models, loaded only when something reads them.
"""
