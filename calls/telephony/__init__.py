"""The call side of telephony: the simulator provider (``simulator``, with the speech it
plays into its recordings, ``conversation`` and ``speech``) and Twilio's voice callbacks
(``twilio_callbacks``). The interface, the registry that picks a provider and the Twilio
provider itself are in ``providers``.
"""
