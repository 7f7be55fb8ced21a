//! The suite's own base texts: made-up spam and phishing campaigns, written
//! for this test. Each is a name and its paragraphs (a paragraph may hold
//! line breaks of its own, for sign-offs); `{ID}` is replaced by a number
//! that differs per recipient (a tracking or reference number). A few use
//! characters outside ASCII (€, £, ’, –) so that charset dresses have
//! something to decode.

pub const OWN: &[(&str, &[&str])] = &[
    (
        "invoice",
        &[
            "Your invoice INV-{ID} from Northgate Office Supplies is now overdue.",
            "Our records show that the payment of €1,284.50 due on 28 October has not been received. To avoid a late fee of 15% and the suspension of your trade account, please settle the outstanding balance within 48 hours.",
            "You can review the itemised invoice and pay securely by card or bank transfer through our customer portal: https://portal.northgate-supplies.example/pay?inv={ID}",
            "If you have already paid, please disregard this notice and accept our thanks. For questions about this invoice, reply to this message or call our accounts team on weekdays between 9 am and 5 pm.",
            "Kind regards,\nAccounts Receivable\nNorthgate Office Supplies Ltd.",
        ],
    ),
    (
        "parcel",
        &[
            "We tried to deliver your parcel today, but nobody was at home to sign for it.",
            "Your package (tracking number {ID}) is now held at our local depot. Because the sender did not pay the full customs charge, a small fee of $2.99 is required before we can schedule a new delivery.",
            "Please confirm your address and pay the fee within three days here: https://track.swiftparcel-delivery.example/r/{ID}",
            "After that date the parcel will be returned to the sender and the fee will no longer be refundable. You will receive a text message with your new delivery slot as soon as the payment is confirmed.",
            "Thank you for choosing SwiftParcel.\nCustomer Care Team",
        ],
    ),
    (
        "crypto",
        &[
            "Imagine waking up to find that your savings grew by 40% while you slept.",
            "That is exactly what thousands of ordinary people are experiencing with QuantumYield, the automated trading platform that uses artificial intelligence to buy and sell Bitcoin at the perfect moment. No experience is required: our algorithm does all the work for you.",
            "Start with as little as $250 and watch your balance grow every single day. Withdrawals are instant and our members report average daily returns of 3.2 percent.",
            "Places in this round are limited to the first 500 investors. Claim your personal account now, before registration closes: https://join.quantumyield-ai.example/start?ref={ID}",
            "Don’t let this opportunity pass you by. The future of wealth is here.",
        ],
    ),
    (
        "pharmacy",
        &[
            "Save up to 80% on your prescription medication with our trusted online pharmacy.",
            "We ship brand and generic medicines worldwide in discreet packaging, with no doctor’s visit and no waiting rooms. Our licensed pharmacists check every order, and all products come from certified manufacturers.",
            "This week only: buy any two packs and get the third one free, plus free express shipping on orders over $99. Popular categories include pain relief, sleep aids, weight loss and men’s health.",
            "Browse the full catalogue and place your order in minutes: https://www.medsdirect-pharma.example/shop?c={ID}",
            "Your privacy is guaranteed. Payments are processed securely and nothing on the package reveals its contents. Order now and feel better tomorrow.",
        ],
    ),
    (
        "suspension",
        &[
            "Important security notice regarding your account.",
            "We detected an unusual sign-in attempt on your mailbox from a device located in another country. For your protection we have temporarily limited access to your account, and some of your incoming messages may not be delivered.",
            "To restore full access, you must verify your identity within 24 hours. Please sign in through the secure link below and confirm your details:\nhttps://secure-login.mailbox-verify.example/restore?case={ID}",
            "If you do not complete the verification before the deadline, your account will be permanently suspended and all stored data will be deleted in accordance with our terms of service.",
            "We apologise for the inconvenience and thank you for helping us keep your account safe.\nThe Security Team",
        ],
    ),
    (
        "lottery",
        &[
            "Congratulations! Your email address has been selected as a winner in the International Online Sweepstakes held on 2 November.",
            "Your address was drawn at random from over 250,000 entries and you have won the second prize of 850,000 euros. Your winning reference number is {ID}.",
            "To claim your prize, you must contact our claims agent, Mr. Henry Whitfield, before the end of this month. Please send him your full name, postal address, telephone number and a copy of your identity document.",
            "Claims agent: claims@global-sweeps-award.example\nOnline form: https://global-sweeps-award.example/claim/{ID}",
            "Keep this notice confidential until your prize has been transferred, to avoid double claims. Once again, congratulations from all of us at the prize committee.",
        ],
    ),
    (
        "job",
        &[
            "We are looking for motivated people to join our team as remote payment processing assistants.",
            "This is a flexible part-time position that takes only two to three hours a day and can be done from home with a laptop and an internet connection. You will receive customer payments into your account, keep a 10% commission and forward the rest to our partners abroad.",
            "The starting salary is $3,500 per month plus bonuses. No previous experience is needed, as full training is provided during the first week.",
            "To apply, simply fill in the short form on our website and one of our recruiters will contact you within two days: https://careers.globallink-staffing.example/apply?job={ID}",
            "Positions are filled on a first come, first served basis, so do not wait too long.\nBest regards,\nHuman Resources Department",
        ],
    ),
    (
        "loan",
        &[
            "Need cash fast? Get approved for a personal loan of up to $50,000 today, even with bad credit.",
            "Our lending partners look at more than your credit score. Whether you want to consolidate debt, renovate your home or cover an unexpected bill, we can match you with a lender in minutes. Rates start at just 4.9% APR and there are no hidden fees.",
            "The application is quick and completely online. Most applicants receive a decision within five minutes, and the money can be in your bank account by the next business day.",
            "Check your rate now without affecting your credit score: https://apply.rapidfund-loans.example/check?offer={ID}",
            "Offer code {ID} is reserved for you until Friday.\nRapidFund Lending Network",
        ],
    ),
    (
        "dating",
        &[
            "Hi there, I hope you don’t mind me writing to you out of the blue.",
            "My name is Natalia, I am 29 years old and I live in a small town near the sea. I saw your profile a few days ago and something about your smile made me want to say hello. I am a kind and honest woman, I love cooking, long walks and quiet evenings with a good film.",
            "I am not looking for games, I want to find a serious man to share my life with. If you would like to know more about me and see my private photos, you can find my page here: https://meet.sweethearts-online.example/natalia?v={ID}",
            "I will be waiting for your letter. Please write soon, I think we could be very happy together.\nHugs and kisses,\nNatalia",
        ],
    ),
    (
        "seo",
        &[
            "I was looking at your website today and noticed that it does not appear on the first page of Google for several of your most important keywords.",
            "That means you are losing customers to your competitors every single day. Our team of search engine specialists can fix that. We have helped more than 1,200 small businesses reach the top of the search results within 90 days, using only safe and proven methods.",
            "Our service includes a full technical audit, keyword research, on-page optimisation, quality backlinks and a monthly ranking report. Prices start from only $199 per month and there is no long-term contract.",
            "Reply to this email with your phone number for a free consultation, or book a call directly here: https://rankboost-seo.example/free-audit?site={ID}",
            "Best regards,\nDaniel Carter\nSenior SEO Consultant",
        ],
    ),
    (
        "inheritance",
        &[
            "I am Barrister James Okoro, a solicitor at law and the personal attorney to the late Mr. Robert Harrington, a foreign contractor who lost his life in a car accident three years ago.",
            "My late client left a deposit of 7.5 million US dollars with a bank here, and no next of kin has come forward to claim it. The bank has now issued me a notice to provide a relative, or the fund will be confiscated by the government.",
            "Because you share the same surname and nationality, I am contacting you to present you as the beneficiary. The transaction is legal and risk free, and we will share the funds 50/50.",
            "Please reply with your full name and direct telephone number to my private address, barrister.okoro@legal-chambers.example, quoting file reference {ID}. More details: https://legal-chambers.example/case/{ID}",
            "Yours faithfully,\nBarrister James Okoro",
        ],
    ),
    (
        "licence",
        &[
            "Your OfficePro 365 licence expires in 3 days.",
            "Our records show that the subscription registered to this email address (licence key ending in {ID}) has not been renewed. When the licence expires, you will lose access to your documents, spreadsheets and calendar, and files stored in your cloud drive may become read-only.",
            "Renew today and get 65% off the regular price, with automatic activation on up to five devices. The renewal takes less than two minutes and your files and settings stay exactly as they are.",
            "Renew your licence now: https://renew.officepro-licence-center.example/renew?key={ID}",
            "If you do not renew, your licence will be deactivated automatically at the end of the grace period.\nLicensing Department – Software Renewal Center",
        ],
    ),
    (
        "tax_refund",
        &[
            "After the last annual calculation of your fiscal activity, we have determined that you are eligible to receive a tax refund of £428.60.",
            "Please submit the tax refund request and allow us 3 to 5 business days to process it. A refund can be delayed for a variety of reasons, for example submitting invalid records or applying after the deadline.",
            "To access the form for your tax refund, please follow the secure link below and enter the reference number {ID} when asked: https://refunds.revenue-online-service.example/claim?ref={ID}",
            "Note: for security reasons, we will record your IP address and the date of the request. Deliberate wrong inputs are criminally pursued and indicted.",
            "Revenue Online Service\nRefunds Office",
        ],
    ),
    (
        "survey_reward",
        &[
            "Congratulations, you have been chosen to take part in our annual customer satisfaction survey!",
            "It will only take a minute of your time, and as a thank you for your feedback you will receive an exclusive reward worth $90. Choose between a wireless speaker, a smart watch or a gift card for your favourite store.",
            "There are only 12 rewards left today, so please complete the nine short questions as soon as possible to secure yours. The survey closes at midnight and unclaimed rewards are given to the next participant.",
            "Start the survey here: https://rewards.shopper-opinion-panel.example/s/{ID}",
            "We value your opinion and look forward to hearing from you.\nThe Customer Experience Team",
        ],
    ),
];
