"""Machine signals: every call the server makes to a model, and what it keeps of the answers.

The operator's endpoints and their clients (``endpoints``, ``client``: one bounded request
loop), generation of solutions (``generation``, ``chat``, ``prompts``), machine evidence about
steps (``evidence``), a PRM served elsewhere (``served``), the machine labels exports read
(``labels``) and phase 1 mode's live candidates (``phase1_sampling``). See docs/architecture.md.
"""
