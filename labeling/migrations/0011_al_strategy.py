"""Campaign.al_strategy: campaigns that exist keep PRM800K's rule, which ordered their queue
until now; new campaigns get uniform, which measured best on real labels (docs/active-learning.md).
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('labeling', '0010_bulkaction_heartbeat_attempts'),
    ]

    operations = [
        migrations.AddField(
            model_name='campaign',
            name='al_strategy',
            field=models.CharField(choices=[('convincing-wrong', 'convincing wrong answers (PRM800K)'), ('uncertainty', 'uncertainty (where the PRM is least sure)'), ('verifier', 'imported verifier score'), ('uniform', 'uniform (random order, the control)'), ('mixed', 'half uncertainty, half convincing wrong answers')], default='convincing-wrong', help_text='How active learning orders the queue.', max_length=20),
        ),
        migrations.AlterField(
            model_name='campaign',
            name='al_strategy',
            field=models.CharField(choices=[('convincing-wrong', 'convincing wrong answers (PRM800K)'), ('uncertainty', 'uncertainty (where the PRM is least sure)'), ('verifier', 'imported verifier score'), ('uniform', 'uniform (random order, the control)'), ('mixed', 'half uncertainty, half convincing wrong answers')], default='uniform', help_text='How active learning orders the queue.', max_length=20),
        ),
    ]
