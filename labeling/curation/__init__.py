"""The data browser and curation, in one home.

- ``filters``: the filters and sorts over a campaign's solutions, declared once (the browser page,
  the API's solution list, bulk actions and exports of a selection all parse them here);
- ``actions``: what a manager does to solutions, one or many (requeue, archive, restore, make gold,
  ground truth), and the bulk-action jobs that do it for many;
- ``history``: what happened to a solution, for the item page;
- ``views``: the browser's pages (list, item, actions, a bulk job's status).
"""
