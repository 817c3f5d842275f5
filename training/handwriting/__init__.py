"""The handwriting line classifier (`vision.handwriting`): generated training data and training."""
