"""Word lists for :mod:`train.sentences`, written for this project.

Single words are given as whitespace-separated strings (:func:`words`), phrases as
``|``-separated strings (:func:`phrases`). English nouns are singular (plurals come from
:func:`plural`), English verbs are base forms (other forms from :func:`verb_forms`). Mandarin
countable nouns carry their measure word, ``"本:书"``. Mandarin lists are simplified characters.
"""

from __future__ import annotations


def words(s: str) -> tuple[str, ...]:
    return tuple(s.split())


def phrases(s: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in s.split("|") if p.strip())


# ==================================================================================== English
EN_NAMES = words(
    "Alice Brian Chloe Daniel Emma Felix Grace Henry Isla Jack Kevin Laura Mason Nora Oliver "
    "Priya Quentin Rosa Samuel Tara Umar Violet Walter Xavier Yusuf Zoe Marco Hannah Leo Mei "
    "Aaron Beatrice Carlos Delia Ethan Fatima Gareth Hugo Ingrid Jasper Keiko Lucas Maya Nikolai "
    "Olga Pablo Rachel Sven Tomas Ursula Vincent Wendy Yara Zack Amelia Benjamin Camila Dmitri "
    "Elena Farid Gloria Harvey Imani Javier Kwame Lena Mateo Naomi Owen Penelope Rafael Sophie "
    "Theo Valentina William Ximena Yasmin Abigail Bruno Cedric Diana Elijah Freya Gabriel Heidi "
    "Ivan Julia Kai Lily Miguel Nadia Oscar Paige Ruben Sakura Tristan Uma Victor Willow Arjun "
    "Bianca Connor Dante Esther Finn Gemma Hector Iris Jonah Kira Liam Mila Nathan Ophelia Percy "
    "Quinn Riley Stella Tobias Vera Wyatt Aiden Bella Caleb Daisy Eric Fiona George Holly Isaac "
    "Jade Kyle Lucy Max Nina Patrick Ruby Sean Tessa Victoria Ada Boris Clara Declan Eva Frank "
    "Greta Ian Joy Ken Louise Martin Noah Olivia Peter Rita Simon Thomas Ava Bob Cora Dean Ellie"
)
EN_HANDLES = words(
    "NightOwl PixelFox CaptainKiwi SleepyPanda MochiCat TurboSnail LunaMoth CosmicToast "
    "WaffleKing ShadowBunny MangoTango FrostByte LazyLlama RocketRaccoon BubbleTea NoodleBoss "
    "StarDust GhostPepper MintyFresh HoneyBadger"
)
EN_CITIES = phrases(
    "London|Paris|Tokyo|Berlin|Madrid|Rome|Sydney|Toronto|Chicago|Boston|Seattle|Denver|Dublin|"
    "Edinburgh|Manchester|Vienna|Prague|Lisbon|Oslo|Stockholm|Helsinki|Copenhagen|Amsterdam|"
    "Brussels|Zurich|Geneva|Athens|Istanbul|Cairo|Nairobi|Lagos|Cape Town|Mumbai|Delhi|Bangkok|"
    "Singapore|Seoul|Shanghai|Beijing|Hong Kong|Taipei|Osaka|Kyoto|Manila|Jakarta|Melbourne|"
    "Auckland|Vancouver|Montreal|Mexico City|Lima|Bogota|Santiago|Buenos Aires|Rio|Havana|Miami|"
    "Atlanta|Houston|Dallas|Phoenix|Portland|San Diego|Las Vegas|New Orleans|Nashville|Detroit|"
    "Philadelphia|Pittsburgh|Baltimore|Glasgow|Cardiff|Belfast|Liverpool|Bristol|Oxford|"
    "Cambridge|Warsaw|Budapest|Munich|Hamburg|Marseille|Barcelona|Venice|Florence|Naples|"
    "Dubai|Doha|Reykjavik|Anchorage|Honolulu|Quebec"
)
EN_COUNTRIES = phrases(
    "Canada|Mexico|Brazil|Argentina|Chile|Peru|France|Germany|Spain|Portugal|Italy|Greece|"
    "Norway|Sweden|Finland|Iceland|Ireland|Scotland|Poland|Austria|Switzerland|Egypt|Kenya|"
    "Nigeria|Morocco|India|Japan|Korea|China|Vietnam|Thailand|Indonesia|Australia|New Zealand|"
    "Turkey|Ukraine|Hungary|Croatia|the Netherlands|Belgium|Denmark|Malaysia|the Philippines"
)
EN_PLACES = words(
    "library station harbor park kitchen cabin cafe museum airport garden bridge gym market "
    "tower beach hospital bakery studio office basement attic garage balcony rooftop lobby "
    "hallway stadium arena theater cinema mall pharmacy bank post-office school campus "
    "playground zoo aquarium farm barn warehouse factory laboratory classroom dormitory hotel "
    "motel hostel restaurant diner pub bookstore supermarket laundromat parking-lot pier "
    "lighthouse castle palace temple church cathedral cemetery forest desert valley canyon "
    "island lake pond waterfall cave meadow vineyard orchard greenhouse courtyard subway "
    "tunnel highway crossroads alley plaza fountain marina campsite ski-resort skatepark "
    "arcade bowling-alley concert-hall gallery embassy courthouse prison clinic salon "
    "barbershop bus-stop terminal platform dock"
)
EN_FOODS = phrases(
    "pizza|pasta|sushi|ramen|dumplings|tacos|burritos|pancakes|waffles|croissants|bagels|"
    "noodles|fried rice|curry|soup|salad|sandwiches|burgers|fries|hot dogs|steak|chicken wings|"
    "meatballs|lasagna|omelette|scrambled eggs|toast|oatmeal|cereal|yogurt|cheesecake|brownies|"
    "cookies|muffins|cupcakes|donuts|ice cream|chocolate|popcorn|pretzels|nachos|guacamole|"
    "hummus|falafel|kebabs|gyoza|tempura|kimchi|bibimbap|pho|spring rolls|mango sticky rice|"
    "apple pie|pumpkin soup|tomato sauce|garlic bread|mashed potatoes|roast beef|grilled salmon|"
    "shrimp|lobster|oysters|tofu|mushrooms|broccoli|carrots|spinach|avocado toast|strawberries|"
    "blueberries|watermelon|pineapple|bananas|grapes|cherries|peaches|lemons|oranges|apples|"
    "coconut|peanut butter|jam|honey|cinnamon rolls|tiramisu|macarons|pudding|jelly|lollipops|"
    "marshmallows|cotton candy|bubble tea|coffee|espresso|green tea|hot chocolate|lemonade|"
    "orange juice|smoothies|milkshakes|sparkling water|cola|porridge|hotpot|barbecue|"
    "dim sum|fish and chips|mac and cheese|chili|risotto|paella|quesadillas|granola|crackers"
)
EN_ANIMALS = words(
    "cat dog rabbit hamster parrot turtle goldfish horse pony cow pig sheep goat chicken duck "
    "goose swan owl eagle hawk falcon crow pigeon sparrow penguin seal walrus dolphin whale "
    "shark octopus squid crab lobster jellyfish frog toad lizard snake crocodile alligator "
    "tiger lion leopard cheetah panther wolf fox bear panda koala kangaroo monkey gorilla "
    "chimpanzee elephant giraffe zebra hippo rhino camel llama alpaca deer moose raccoon "
    "squirrel chipmunk hedgehog otter beaver badger bat mouse rat ferret butterfly bee wasp "
    "ant beetle spider snail worm moth ladybug dragonfly flamingo peacock pelican"
)
EN_THINGS = words(
    "umbrella notebook violin key box cake map clock ticket chair letter bicycle bag album "
    "glove report jar remote lamp candle mirror pillow blanket towel bottle cup mug plate "
    "bowl spoon fork knife pan kettle toaster blender fridge oven sofa couch desk shelf "
    "drawer cabinet wardrobe curtain carpet rug vase frame painting poster sticker stamp "
    "envelope package parcel wallet purse backpack suitcase briefcase basket bucket ladder "
    "hammer screwdriver wrench drill saw nail screw rope chain lock padlock flashlight "
    "battery charger cable plug adapter speaker microphone headset keyboard mouse monitor "
    "laptop tablet phone camera tripod printer scanner router modem controller joystick "
    "console cartridge disc hard-drive card badge trophy medal ribbon balloon kite puzzle "
    "toy doll robot drone skateboard scooter helmet racket ball bat glove net tent "
    "flashcard calendar diary pencil pen marker crayon eraser ruler stapler folder binder "
    "textbook novel comic magazine newspaper brochure menu receipt invoice coupon voucher "
    "passport visa license certificate diploma ring necklace bracelet earring watch "
    "sunglasses hat scarf jacket coat sweater hoodie shirt dress skirt jeans shorts sock "
    "boot sneaker sandal slipper belt tie button zipper thread needle plant cactus "
    "sunflower rose tulip seed shovel rake hose sprinkler wheelbarrow fence gate doorbell "
    "mailbox window door roof chimney staircase elevator escalator"
)
EN_TECH = phrases(
    "Wi-Fi|Bluetooth|GPU|CPU|RAM|SSD|USB cable|HDMI port|router|firmware|driver|browser|"
    "database|server|cloud backup|password manager|VPN|API|app|website|chatbot|algorithm|"
    "neural network|language model|spreadsheet|PDF|JPEG|screenshot|livestream|podcast|webcam|"
    "overlay|plugin|patch|update|download|upload|bandwidth|latency|ping|frame rate|resolution|"
    "codec|microphone|soundboard|emote|subscription|notification|inbox|calendar app|smartwatch|"
    "headphones|earbuds|QR code|barcode|touchscreen|charging port|power bank|SD card|"
    "operating system|compiler|terminal|keyboard shortcut|dark mode|auto-save|captcha"
)
EN_DEVICES = phrases(
    "router|GPU|webcam|microphone|headphones|earbuds|smartwatch|power bank|laptop|tablet|"
    "phone|keyboard|mouse|monitor|controller|console|printer|camera|drone|speaker|hard drive|"
    "graphics card|capture card|ring light|mixer|e-reader|smart speaker|VR headset"
)
EN_BRANDS = phrases(
    "YouTube|Twitch|Discord|Spotify|Netflix|Google|Apple|Microsoft|Amazon|Nintendo|"
    "PlayStation|Xbox|Steam|Reddit|Wikipedia|Instagram|TikTok|WhatsApp|Zoom|Slack|GitHub|"
    "Linux|Windows|Android|iPhone|iPad|MacBook|Tesla|Lego|IKEA|Starbucks|McDonald's|Uber|"
    "Airbnb|Pokemon|Minecraft|Tetris|Zelda|Mario|Photoshop|Excel|PowerPoint|Chrome|Firefox"
)
EN_JOBS = words(
    "teacher doctor nurse dentist pilot chef baker farmer firefighter engineer programmer "
    "designer artist painter musician singer dancer actor writer journalist editor "
    "photographer librarian lawyer judge accountant banker cashier waiter barista mechanic "
    "electrician plumber carpenter gardener scientist chemist biologist astronaut sailor "
    "soldier detective architect pharmacist veterinarian surgeon therapist coach referee "
    "athlete streamer producer translator tailor florist butcher fisherman janitor "
    "receptionist manager professor student intern volunteer"
)
EN_NATURE = words(
    "river mountain storm rainbow sunset sunrise thunder lightning breeze fog snow hail "
    "glacier volcano ocean wave tide cliff hill valley meadow forest jungle swamp desert "
    "dune prairie stream creek puddle pebble boulder moss fern oak pine maple willow "
    "bamboo blossom leaf branch root moon star comet planet galaxy sky cloud horizon"
)
EN_ABSTRACT = words(
    "idea plan mistake decision question answer problem solution secret promise rumor "
    "theory lesson habit dream memory opinion reason excuse chance risk goal deadline "
    "schedule budget strategy rule joke story surprise challenge result score record "
    "pattern mystery advice warning reminder apology compliment argument agreement "
    "routine tradition experiment project proposal"
)
EN_GAMES = phrases(
    "chess|poker|bingo|Monopoly|Scrabble|hide and seek|tag|football|soccer|basketball|"
    "baseball|tennis|badminton|volleyball|table tennis|golf|hockey|cricket|rugby|bowling|"
    "darts|karaoke|trivia night|the speedrun|the boss fight|the escape room|the puzzle game|"
    "the racing game|the horror game|the rhythm game|the card game|the battle royale|"
    "the farming sim|the platformer|ranked mode|co-op mode|the final level|the side quest"
)
EN_HOBBIES = phrases(
    "knitting|baking|gardening|hiking|camping|fishing|swimming|cycling|skating|surfing|"
    "climbing|running|yoga|painting|drawing|sketching|pottery|photography|birdwatching|"
    "journaling|origami|calligraphy|woodworking|juggling|chess|coding|cooking|dancing|"
    "singing|stargazing|sewing|collecting stamps|learning French|playing the piano|"
    "playing the guitar|playing drums|writing poems|reading mysteries|building models"
)
EN_ADJ = words(
    "quiet bright chilly crowded peaceful gloomy cheerful enormous tiny ancient modern noisy "
    "gentle rough smooth golden misty busy lonely fragrant shiny dusty rusty fancy plain "
    "colorful pale dark sunny cloudy windy rainy snowy freezing warm cozy spacious narrow "
    "wide steep flat curved crooked sharp blunt heavy light soft hard sticky slippery fluffy "
    "fuzzy silky bumpy greasy elegant clumsy graceful awkward ordinary unusual rare common "
    "famous mysterious magical haunted secret hidden broken brand-new secondhand expensive "
    "cheap affordable valuable useless handy fragile sturdy wooden metal plastic glass paper "
    "leather woolen striped spotted checkered purple orange yellow green blue red pink silver "
    "turquoise crimson beige massive gigantic miniature messy tidy neat clean filthy damp "
    "soggy dry hollow solid loud silent"
)
EN_ADJ_TASTE = words(
    "crispy crunchy juicy spicy salty sweet sour bitter bland fresh stale ripe delicious "
    "disgusting tender chewy creamy smoky tangy savory buttery cheesy greasy"
)
EN_ADJ_EVAL = words(
    "weird wonderful terrible horrible awesome amazing incredible gorgeous adorable cute "
    "strange lovely ugly hilarious ridiculous beautiful brilliant fantastic boring scary "
    "impressive cursed chaotic wholesome"
)
EN_FEELINGS = words(
    "happy nervous excited tired surprised grateful worried proud confused relieved angry "
    "curious disappointed calm thrilled sad lonely anxious furious jealous embarrassed "
    "ashamed hopeful scared terrified delighted bored annoyed frustrated exhausted "
    "overwhelmed inspired amazed shocked heartbroken homesick sleepy hungry grumpy "
    "cheerful content motivated determined restless impatient shy confident"
)
EN_ADVERBS = words(
    "slowly quickly carefully suddenly quietly happily finally barely gently loudly softly "
    "proudly nervously eagerly calmly angrily sadly secretly patiently politely rudely "
    "bravely boldly clumsily gracefully lazily honestly seriously totally completely "
    "absolutely nearly almost really truly simply mostly rarely often always never "
    "sometimes usually probably definitely"
)
# Verbs that take a physical object: "fix the lamp", "painted the fence".
EN_VERBS_OBJ = words(
    "fix clean paint carry drop open wash fold move buy sell borrow lend find lose break "
    "build check hide share wrap throw catch polish measure weigh charge unplug replace "
    "return order pack unpack label sort scan print stack decorate repair lift push pull "
    "drag kick grab hold squeeze shake flip spin bend twist stretch cut chop slice peel "
    "crush bury dig sketch photograph deliver mail ship steal "
    "inspect test weigh organize rearrange borrow recycle donate"
)
EN_VERBS_INTR = words(
    "swim run dance sing laugh cry sleep cook travel wait walk jump climb shout whisper "
    "smile frown sneeze cough yawn giggle scream sigh nod wave rest relax hurry wander "
    "explore practice study listen win lose play stream chat argue apologize complain "
    "celebrate shiver sweat blink stumble"
)
EN_IRREGULAR = {
    "break": ("broke", "broken"),
    "build": ("built", "built"),
    "buy": ("bought", "bought"),
    "catch": ("caught", "caught"),
    "cut": ("cut", "cut"),
    "dig": ("dug", "dug"),
    "feed": ("fed", "fed"),
    "find": ("found", "found"),
    "grab": ("grabbed", "grabbed"),
    "hide": ("hid", "hidden"),
    "hold": ("held", "held"),
    "lend": ("lent", "lent"),
    "lose": ("lost", "lost"),
    "run": ("ran", "run"),
    "sell": ("sold", "sold"),
    "shake": ("shook", "shaken"),
    "sing": ("sang", "sung"),
    "sleep": ("slept", "slept"),
    "spin": ("spun", "spun"),
    "steal": ("stole", "stolen"),
    "swim": ("swam", "swum"),
    "throw": ("threw", "thrown"),
    "win": ("won", "won"),
    "bend": ("bent", "bent"),
    "put": ("put", "put"),
}
_DOUBLE_FINAL = frozenset(
    words(
        "chop drop flip grab plan shop stop dig run swim spin win cut wrap ship drag chat nod tap"
    )
)


def plural(noun: str) -> str:
    """English plural of a singular noun (regular rules and a few exceptions)."""
    special = {
        "mouse": "mice",
        "knife": "knives",
        "leaf": "leaves",
        "shelf": "shelves",
        "wolf": "wolves",
        "sheep": "sheep",
        "deer": "deer",
        "moose": "moose",
        "goose": "geese",
        "person": "people",
        "child": "children",
        "fish": "fish",
        "scarf": "scarves",
        "volcano": "volcanoes",
        "cactus": "cacti",
        "jeans": "jeans",
        "shorts": "shorts",
    }
    if noun in special:
        return special[noun]
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    return noun + "s"


def verb_forms(verb: str) -> tuple[str, str, str, str, str]:
    """``(base, third person -s, past, -ing, past participle)`` of an English verb."""
    if verb.endswith(("s", "x", "z", "ch", "sh", "o")):
        third = verb + "es"
    elif verb.endswith("y") and verb[-2] not in "aeiou":
        third = verb[:-1] + "ies"
    else:
        third = verb + "s"
    stem = verb + verb[-1] if verb in _DOUBLE_FINAL else verb
    if verb.endswith("ie"):
        ing = verb[:-2] + "ying"
    elif verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        ing = verb[:-1] + "ing"
    else:
        ing = stem + "ing"
    if verb in EN_IRREGULAR:
        past = EN_IRREGULAR[verb][0]
    elif verb.endswith("e"):
        past = verb + "d"
    elif verb.endswith("y") and verb[-2] not in "aeiou":
        past = verb[:-1] + "ied"
    else:
        past = stem + "ed"
    participle = EN_IRREGULAR[verb][1] if verb in EN_IRREGULAR else past
    return verb, third, past, ing, participle


EN_SHORT = phrases(
    "Yes!|No.|Nope.|Sure.|Okay.|OK!|Wait, what?|Really?|Seriously?|No way!|Wow!|Oh no.|"
    "Thank you!|Thanks!|Got it.|Good night!|Morning!|Hi there!|Hello!|Bye!|See ya!|Welcome!|"
    "Nice!|Cool.|Great job!|Well done!|Oops.|Yikes!|Ouch!|Hmm.|Huh?|What?|Why?|How?|"
    "Where?|When?|Who, me?|Me too.|Same here.|Fair enough.|Not bad.|Too late.|Almost!|"
    "So close!|Let's go!|Here we go.|Hold on.|Stop!|Help!|Run!|Listen.|Look!|Quiet, please.|"
    "Of course.|Absolutely.|Definitely not.|Maybe.|I guess.|Who knows?|Never mind.|"
    "My bad.|Sorry!|Excuse me?|Pardon?|Bless you!|Cheers!|Congrats!|Happy birthday!|"
    "Good luck!|Take care.|Sweet dreams.|Good game!|GG!|lol|LOL, nice.|gg ez|+1|F.|"
    "Big brain.|Clutch!|Let him cook.|No spoilers!|Touch grass.|Same.|Facts.|Mood.|"
    "Oh, hello!|Ah, I see.|Ugh.|Bravo!|Encore!|Wonderful.|Perfect.|Brilliant!|Gross!|"
    "Whatever.|Fine.|Deal.|Done!|Ready?|Now!|Later.|Tomorrow.|Not yet.|Right?|Exactly.|"
    "True.|False.|Correct!|Wrong.|Hold up.|Uh-huh.|Mm-hmm.|Whoa!|Boo!|Shh.|Eek!|Aww.|"
    "Hooray!|Oh my gosh!|Unbelievable.|Incredible!|Calm down.|Chill.|Relax.|Breathe."
)
EN_LAUGHS = phrases(
    "haha|hahaha|hahahaha|hehe|lol|lmao|LOL|hah|ha ha ha|rofl|lolol|heh|xD|hahaha okay|ahaha|pfft"
)
EN_INTERJECTIONS = phrases(
    "oh|ah|wow|whoa|hey|ugh|ooh|aww|yay|hmm|oops|yikes|phew|gosh|jeez|welp|uh|um|huh|oof|"
    "dang|wow okay|oh man|oh boy|oh wow|well|alright|okay so|ah well|uh oh"
)
EN_GIFTS = phrases(
    "five gifted subs|a tier one sub|a tier three sub|a hundred bits|five hundred bits|"
    "a thousand bits|the raid|the super chat|the donation|the follow|the prime sub|"
    "the gift bomb|the membership|the rose|the rocket|the coffee"
)
EN_EMOTIONS = {
    "happy": phrases(
        "This is the best day ever!|I'm so happy I could cry.|You just made my whole week!|"
        "I can't stop smiling right now.|Honestly, this is wonderful news.|"
        "We did it, we actually did it!|My heart is so full right now."
    ),
    "sad": phrases(
        "I really miss the old days.|It's hard to say goodbye.|I'm sorry, I just feel a bit down "
        "today.|Nothing feels the same anymore.|I wish things had turned out differently.|"
        "That song always makes me a little sad.|It's okay to cry sometimes."
    ),
    "angry": phrases(
        "That is completely unacceptable!|Stop doing that right now!|I've had enough of this!|"
        "Who keeps spamming the chat?|Are you kidding me?|This is so unfair!|"
        "I told you three times already!"
    ),
    "surprised": phrases(
        "Wait, are you serious?|No way, that's impossible!|I did not see that coming!|"
        "Hold on, since when?|You're kidding, right?|Whoa, where did that come from?|"
        "Oh my gosh, is that real?"
    ),
    "fearful": phrases(
        "Did you hear that noise?|I don't want to go in there.|Something is behind the door.|"
        "Please tell me that was the wind.|I have a really bad feeling about this.|"
        "Don't leave me alone in here!|Why did the lights just go out?"
    ),
    "disgusted": phrases(
        "Ew, that's disgusting!|Gross, what is that smell?|I can't even look at it.|"
        "That's the worst thing I've ever tasted.|Please put that away.|"
        "Yuck, it's all sticky!|Who left this in the fridge for a month?"
    ),
}

# ==================================================================================== Mandarin
ZH_SURNAMES = words(
    "王 李 张 刘 陈 杨 黄 赵 吴 周 徐 孙 马 朱 胡 郭 何 高 林 罗 郑 梁 谢 宋 唐 许 韩 冯 邓 曹 "
    "彭 曾 肖 田 董 袁 潘 于 蒋 蔡 余 杜 叶 程 苏 魏 吕 丁 任 沈 姚 卢 姜 崔 钟 谭 陆 汪 范 金 "
    "石 廖 贾 夏 韦 付 方 白 邹 孟 熊 秦 邱 江 尹 薛 闫 段 雷 侯 龙 史 陶 黎 贺 顾 毛 郝 龚 邵 "
    "万 钱 严 覃 武 戴 莫 孔 向 汤 常 温 康 施 文 牛 樊 葛 邢 安 齐 易 乔 伍 庞 颜 倪 庄 聂 章 "
    "鲁 岳 翟 殷 詹 申 欧阳 上官 司马 诸葛"
)
ZH_GIVEN = words(
    "伟 芳 娜 敏 静 丽 强 磊 军 洋 勇 艳 杰 娟 涛 明 超 秀兰 霞 平 刚 桂英 华 玉兰 萍 鹏 辉 "
    "玲 建华 红 婷 雪 琳 晨 浩然 子轩 欣怡 梓涵 雨桐 思远 俊杰 嘉怡 一鸣 宇航 诗涵 梦琪 "
    "晓东 海燕 志强 文博 佳琪 若曦 天佑 紫萱 雅婷 博文 家豪 慧敏 立新 春生 秋菊 冬梅 "
    "逸飞 清风 子墨 安然 星辰 语嫣 浩宇 晴 朗 悦 岚 凯 斌 翔 琦 蕾 薇 璐 瑶 昊 睿 哲 "
    "彤 茜 蓉 莉 妍 菲 婧 航 宁 彬 康 毅 帆 鑫 颖 倩 楠 冉 阳 峰"
)
ZH_TITLES = words("老师 医生 经理 师傅 阿姨 叔叔 教授 同学 队长 老板 主任 大哥 姐姐 奶奶 爷爷")
ZH_NICKNAMES = words(
    "小鱼干 咸鱼不翻身 奶茶三分糖 今天也要加油 夜猫子 月亮不睡我不睡 芝士就是力量 "
    "路过的猫 吃饱了再说 快乐小狗 小橘子 奶盖 熬夜冠军 早睡早起 不吃香菜 一颗柠檬 "
    "摸鱼达人 土豆泥 风吹麦浪 南风知我意 星河滚烫 小笼包 西瓜太郎 北方的雪 甜甜圈 "
    "草莓味的云 汽水 麻辣烫 冰美式 大白兔 小透明 打工人 干饭人 追光者 海盐芝士 "
    "晚风 晴天 雨后彩虹 一只小熊 阿狸 团子 糯米 豆豆 毛毛 球球 胖虎 小黑 老王 阿杰"
)
ZH_CITIES = words(
    "北京 上海 广州 深圳 天津 重庆 成都 杭州 南京 武汉 西安 长沙 郑州 济南 青岛 大连 沈阳 "
    "哈尔滨 长春 石家庄 太原 呼和浩特 银川 兰州 西宁 乌鲁木齐 拉萨 昆明 贵阳 南宁 海口 三亚 "
    "福州 厦门 南昌 合肥 苏州 无锡 宁波 温州 绍兴 扬州 桂林 丽江 大理 洛阳 开封 珠海 佛山 "
    "东莞 汕头 泉州 烟台 威海 秦皇岛 香港 澳门 台北 高雄 景德镇 敦煌 喀什 "
    "延边 北海 潮州 黄山市 泰安 乐山 舟山 徐州 常州 嘉兴 宜昌 襄阳 岳阳 株洲 遵义 柳州"
)
ZH_COUNTRIES = words(
    "日本 韩国 美国 英国 法国 德国 意大利 西班牙 葡萄牙 俄罗斯 加拿大 澳大利亚 新西兰 泰国 "
    "越南 新加坡 马来西亚 印度尼西亚 印度 埃及 巴西 阿根廷 墨西哥 冰岛 挪威 瑞典 芬兰 瑞士 "
    "荷兰 希腊 土耳其"
)
ZH_PLACES = words(
    "图书馆 火车站 公园 厨房 山顶 咖啡店 博物馆 机场 花园 大桥 体育馆 菜市场 海边 医院 "
    "面包店 办公室 学校门口 地铁站 电影院 河边 超市 商场 书店 便利店 快递站 食堂 宿舍 "
    "操场 教室 实验室 游乐园 动物园 水族馆 美术馆 音乐厅 健身房 游泳馆 篮球场 足球场 "
    "网吧 奶茶店 火锅店 烧烤摊 夜市 小吃街 步行街 广场 天台 阳台 客厅 卧室 楼下 小区门口 "
    "停车场 加油站 高铁站 候车室 服务区 景区 古镇 寺庙 山脚下 湖边 沙滩 草地 田野 果园 "
    "农家乐 民宿 酒店 银行 邮局 派出所 药店 理发店 洗衣房 车库 电梯里 走廊 会议室 "
    "直播间 录音棚 工作室 后台 舞台"
)
# measure word : noun
ZH_THINGS = words(
    "把:伞 本:笔记本 个:橘子 把:小提琴 把:钥匙 箱:书 个:蛋糕 张:地图 个:闹钟 张:电影票 "
    "杯:茉莉花茶 把:椅子 封:信 辆:自行车 袋:水果 本:相册 副:手套 份:报告 罐:蜂蜜 "
    "个:遥控器 盏:台灯 根:蜡烛 面:镜子 个:枕头 条:毯子 条:毛巾 瓶:矿泉水 个:杯子 "
    "个:盘子 只:碗 双:筷子 口:锅 台:冰箱 张:沙发 张:书桌 个:书架 个:抽屉 幅:画 "
    "张:海报 张:贴纸 张:邮票 个:信封 个:包裹 个:钱包 个:书包 个:行李箱 个:篮子 "
    "个:水桶 把:梯子 把:锤子 把:螺丝刀 根:绳子 把:锁 个:手电筒 节:电池 个:充电器 "
    "根:数据线 个:插头 个:音箱 个:麦克风 副:耳机 个:键盘 个:鼠标 台:显示器 "
    "台:笔记本电脑 台:平板 部:手机 台:相机 台:打印机 个:路由器 个:手柄 台:游戏机 "
    "张:银行卡 个:奖杯 块:奖牌 个:气球 只:风筝 盒:拼图 个:玩具 个:娃娃 个:机器人 "
    "架:无人机 块:滑板 个:头盔 副:球拍 个:篮球 顶:帐篷 本:日历 本:日记 支:铅笔 "
    "支:钢笔 块:橡皮 把:尺子 个:文件夹 本:课本 本:小说 本:漫画 本:杂志 份:报纸 "
    "份:菜单 张:发票 张:优惠券 本:护照 张:证书 枚:戒指 条:项链 个:手镯 块:手表 "
    "副:墨镜 顶:帽子 条:围巾 件:外套 件:毛衣 件:卫衣 件:衬衫 条:裙子 条:牛仔裤 "
    "双:袜子 双:靴子 双:运动鞋 双:拖鞋 条:皮带 条:领带 盆:绿植 盆:仙人掌 束:鲜花 "
    "包:种子 把:铲子 扇:窗户 扇:门 把:扇子 个:保温杯 个:暖水袋 台:电风扇 台:空调 "
    "台:洗衣机 个:微波炉 个:电饭锅 把:吉他 架:钢琴 面:鼓 支:口琴 盒:彩笔 本:字典"
)
ZH_FOODS = words(
    "饺子 包子 馒头 面条 米饭 炒饭 粥 馄饨 火锅 烧烤 麻辣烫 凉皮 肉夹馍 煎饼果子 小笼包 "
    "生煎 油条 豆浆 豆腐脑 烤鸭 红烧肉 宫保鸡丁 鱼香肉丝 麻婆豆腐 糖醋排骨 回锅肉 水煮鱼 "
    "酸菜鱼 小龙虾 烤串 炸鸡 汉堡 薯条 披萨 寿司 拉面 咖喱饭 牛排 沙拉 三明治 蛋炒饭 "
    "番茄炒蛋 青椒肉丝 土豆丝 地三鲜 锅包肉 东坡肉 白切鸡 叉烧 肠粉 虾饺 螺蛳粉 热干面 "
    "兰州拉面 刀削面 担担面 酸辣粉 米线 臭豆腐 粽子 月饼 汤圆 年糕 春卷 蛋挞 蛋糕 "
    "冰淇淋 巧克力 饼干 面包 酸奶 西瓜 苹果 香蕉 葡萄 草莓 樱桃 芒果 荔枝 榴莲 菠萝 "
    "橙子 柚子 桃子 梨 哈密瓜 猕猴桃 火龙果 奶茶 咖啡 可乐 果汁 绿茶 红茶 柠檬水 "
    "豆花 糖葫芦 烤红薯 爆米花 辣条 瓜子 花生 卤蛋 茶叶蛋 鸡蛋灌饼 手抓饼 烧麦 锅贴"
)
ZH_ANIMALS = words(
    "猫 狗 兔子 仓鼠 鹦鹉 乌龟 金鱼 马 牛 猪 羊 鸡 鸭 鹅 天鹅 猫头鹰 老鹰 乌鸦 鸽子 麻雀 "
    "企鹅 海豹 海豚 鲸鱼 鲨鱼 章鱼 螃蟹 水母 青蛙 蜥蜴 蛇 鳄鱼 老虎 狮子 豹子 狼 狐狸 熊 "
    "熊猫 考拉 袋鼠 猴子 大象 长颈鹿 斑马 河马 骆驼 羊驼 鹿 松鼠 刺猬 水獭 蝙蝠 老鼠 "
    "蝴蝶 蜜蜂 蚂蚁 蜘蛛 蜗牛 蜻蜓 萤火虫 孔雀 火烈鸟 柯基 哈士奇 柴犬 橘猫 布偶猫"
)
ZH_ANIMAL_MEASURE = {
    "马": "匹", "牛": "头", "猪": "头", "大象": "头", "河马": "头", "鲸鱼": "头", "骆驼": "头",
    "蛇": "条", "金鱼": "条", "鲨鱼": "条", "鳄鱼": "条", "狗": "条",
}  # fmt: skip
ZH_PETS = words("猫 狗 兔子 仓鼠 鹦鹉 乌龟 柯基 哈士奇 柴犬 橘猫 布偶猫 刺猬 金毛 小鸭子")
ZH_GAMES = words(
    "新游戏 恐怖游戏 赛车游戏 音游 卡牌游戏 排位赛 大逃杀 种田游戏 解谜游戏 斗地主 麻将 象棋 "
    "围棋 五子棋 狼人杀 剧本杀 俄罗斯方块 跑酷 新副本 双人游戏 模拟经营 密室逃脱 飞行棋 "
    "你画我猜 谁是卧底 我的世界"
)
ZH_EVENTS = words(
    "期末考试 年会 运动会 毕业典礼 面试 春节 国庆 双十一 跨年 生日 演唱会 决赛 周年庆 开学 "
    "放假 高考 婚礼 发工资 年终奖 元宵节 端午节 情人节 圣诞节 寒假 暑假"
)
ZH_APPS = words(
    "App 微信 QQ B站 Steam 浏览器 Excel Word PPT 输入法 地图App 外卖App 打车软件 网盘 "
    "直播软件 OBS 剪辑软件 Python 邮箱 日历App"
)
ZH_DEVICES = words(
    "iPhone iPad 平板 Switch 游戏机 机械键盘 鼠标 U盘 路由器 蓝牙耳机 显卡 MacBook 电脑 "
    "相机 投影仪 打印机 智能手表 扫地机器人 VR眼镜 充电宝 麦克风 声卡 显示器"
)
ZH_JOBS = words(
    "老师 医生 护士 牙医 飞行员 厨师 面包师 农民 消防员 工程师 程序员 设计师 画家 音乐家 "
    "歌手 舞蹈演员 演员 作家 记者 编辑 摄影师 图书管理员 律师 法官 会计 银行职员 收银员 "
    "服务员 咖啡师 修车师傅 电工 水管工 木匠 园丁 科学家 化学家 宇航员 船长 警察 侦探 "
    "建筑师 药剂师 兽医 外科医生 心理咨询师 教练 裁判 运动员 主播 制片人 翻译 裁缝 "
    "花店老板 快递员 外卖小哥 保安 前台 经理 教授 学生 实习生 志愿者"
)
ZH_ACTIVITIES = words(
    "打篮球 踢足球 打羽毛球 打乒乓球 游泳 跑步 爬山 骑车 滑雪 溜冰 钓鱼 露营 散步 逛街 "
    "看电影 看电视剧 追番 听音乐 唱歌 跳舞 画画 写字 练书法 弹钢琴 弹吉他 拉小提琴 下棋 "
    "打游戏 打扑克 拼乐高 看小说 写日记 背单词 做饭 烤蛋糕 包饺子 泡茶 "
    "煮咖啡 种花 养鱼 遛狗 撸猫 拍照 剪视频 做手工 织毛衣 "
    "睡懒觉 晒太阳 泡温泉 看日出 看星星 放风筝 堆雪人 打雪仗 练瑜伽 健身 做早操 "
    "学英语 学日语 写代码 做PPT 喝奶茶 吃火锅 撸串 "
    "听播客 看直播 开黑 连麦 刷视频 做题 练口语 学做菜 录歌 写小说"
)
ZH_ADJ_PLACE = words(
    "安静 热闹 明亮 寒冷 温暖 拥挤 干净 漂亮 古老 现代 舒服 神秘 美丽 奇怪 宽敞 狭窄 凉快 "
    "闷热 潮湿 干燥 整齐 乱 破旧 崭新 精致 简陋 方便 偏僻 繁华 冷清 浪漫 温馨 壮观 优雅 "
    "朴素 空旷 阴暗 幽静 吵 脏"
)
ZH_ADJ_FOOD = words(
    "好吃 难吃 香 甜 酸 苦 辣 咸 淡 软 硬 脆 嫩 新鲜 油腻 清淡 香甜 酸甜 麻辣 地道 正宗 "
    "便宜 贵 烫 凉 筋道 爽口 入味"
)
ZH_ADJ_PERSON = words(
    "可爱 聪明 调皮 乖 勤快 懒 大方 小气 热情 冷淡 认真 马虎 酷 帅 萌 时髦 胖 瘦 "
    "胆小 勇敢 活泼 老实 贪吃 黏人 机灵 淘气 温柔 暴躁"
)
ZH_ADJ_EVAL = words(
    "有趣 无聊 刺激 好看 难看 特别 普通 简单 复杂 精彩 感人 吓人 离谱 好玩 上头 治愈 "
    "烧脑 轻松 辛苦 危险 安全"
)
ZH_ADJ = (
    ZH_ADJ_PLACE
    + ZH_ADJ_FOOD
    + ZH_ADJ_PERSON
    + ZH_ADJ_EVAL
    + words("高 矮 长 短 宽 窄 深 浅 厚 薄 重 轻 快 慢 早 晚 亮 暗 响 远 近 大 小")
)
ZH_FEELINGS = words(
    "开心 紧张 激动 累 惊讶 感激 担心 骄傲 困惑 放心 生气 好奇 失望 平静 难过 孤单 焦虑 "
    "愤怒 嫉妒 尴尬 惭愧 期待 害怕 恐惧 高兴 无聊 烦 沮丧 疲惫 崩溃 感动 震惊 伤心 想家 "
    "困 饿 委屈 满足 踏实 兴奋 幸福 心疼 后悔 不安 郁闷 舒坦 得意 害羞 自信"
)
ZH_TOPICS = words(
    "天气 新游戏 决赛 这道菜 今晚的音乐 那部电影 科学作业 直播安排 旅行计划 新版本 画画比赛 "
    "读书会 演唱会 期末考试 年终总结 新皮肤 抽卡结果 排位赛 周年庆 联动活动 新歌 新番 "
    "年会 运动会 毕业典礼 相亲 面试 团建 春节假期 国庆长假 双十一 跨年晚会 生日派对 "
    "高考 升职加薪 减肥计划 装修进度 房租 工资 这个剧情 那个结局 新副本 这个bug"
)
ZH_IDIOMS = words(
    "一举两得 半途而废 不可思议 画蛇添足 自相矛盾 守株待兔 亡羊补牢 对牛弹琴 井底之蛙 "
    "掩耳盗铃 杞人忧天 一石二鸟 三心二意 七上八下 五颜六色 四面八方 九牛一毛 十全十美 "
    "千方百计 万无一失 心想事成 马到成功 一路顺风 锦上添花 雪中送炭 笑逐颜开 手忙脚乱 "
    "目瞪口呆 哭笑不得 迫不及待 兴高采烈 无精打采 垂头丧气 惊心动魄 提心吊胆 忐忑不安 "
    "津津有味 恍然大悟 一目了然 莫名其妙 理所当然 名副其实 脚踏实地 全力以赴 坚持不懈 "
    "熟能生巧 温故知新 学以致用 乐在其中 欢天喜地 一帆风顺 大吃一惊 胸有成竹 不知所措 "
    "急中生智 岁月静好 人山人海 车水马龙 鸦雀无声 风和日丽 春暖花开 秋高气爽 冰天雪地 "
    "狼吞虎咽 废寝忘食 一见钟情 刮目相看 望尘莫及 无可奈何 啼笑皆非 情不自禁 兴致勃勃"
)
ZH_LATIN = words(
    "App iPhone iPad Wi-Fi AI PPT GDP OK CPU GPU USB KTV PK VIP DIY MV vlog Excel Word "
    "bug PDF APP ID QQ UP主 up主 B站 NPC BOSS DLC CEO HR KPI logo emoji Switch Steam "
    "Windows Mac Linux Python Java 5G 4K VR 3D MVP"
)
ZH_GIFTS = words(
    "小心心 辣条 火箭 超级火箭 嘉年华 小电视 舰长 提督 总督 鲜花 棒棒糖 告白气球 么么哒 "
    "比心 啤酒 荧光棒 金币 小星星 能量饮料 跑车"
)
ZH_SHORT = words(
    "好的。 好。 行。 嗯。 嗯嗯。 对。 对啊！ 是的。 不是。 不对。 没有。 没事。 可以。 不行！ "
    "走吧！ 来了！ 等等！ 啊？ 什么？ 真的吗？ 不会吧？ 为什么？ 怎么了？ 谁啊？ 哪儿？ "
    "几点了？ 多少钱？ 好吧。 算了。 随便。 都行。 收到！ 明白。 懂了。 了解。 谢谢！ "
    "谢谢大家！ 晚安！ 早上好！ 你好！ 大家好！ 拜拜！ 再见！ 欢迎欢迎！ 辛苦了！ 加油！ "
    "冲啊！ 稳住！ 别急。 慢点。 小心！ 快跑！ 救命啊！ 天哪！ 我的天！ 绝了！ 离谱！ "
    "笑死。 哈哈哈哈！ 呜呜呜。 唉。 哎呀！ 哇！ 好耶！ 太好了！ 太棒了！ 厉害！ 牛啊！ "
    "666！ 稳了！ 输了。 赢了！ 上车！ 打卡！ 前排！ 签到！ 来了来了！ 在的。 我在。 "
    "马上。 稍等。 先这样。 下次吧。 没问题！ 当然！ 不客气。 对不起。 没关系。 恭喜！ "
    "生日快乐！ 新年快乐！ 好久不见！ 你说呢？ 是吗？ 好吗？ 行不行？ 对不对？ 是不是？ "
    "别闹。 不至于。 还行吧。 一般般。 挺好的。 真香！ 破防了。 顶！ 附议！ 确实。 有道理。"
)
ZH_LAUGHS = words(
    "哈哈哈哈 哈哈哈 哈哈 嘿嘿 嘻嘻 呵呵 哈哈哈哈哈哈 233 2333 hhh hhhh 笑死 笑不活了 xswl"
)
ZH_INTERJECTIONS = words("哇 哎呀 啊 哦 噢 嗯 唉 哎 哟 天哪 我去 好家伙 嚯 哇塞 咦 呀 喂 嘿 诶 啧")
ZH_ERHUA = words(
    "一点儿 哪儿 这儿 那儿 玩儿 一会儿 好玩儿 小孩儿 聊天儿 遛弯儿 冰棍儿 饭馆儿 花儿 "
    "门口儿 有点儿 一块儿 差不多点儿 老头儿 小猫儿 一下儿"
)
ZH_EMOTIONS = {
    "happy": words(
        "今天真是太开心了！ 我激动得说不出话来！ 这是我收到过最好的礼物！ 终于成功了，好想大喊一声！ "
        "谢谢你们，我真的好幸福啊！ 一想到明天放假，我就忍不住笑出声。"
    ),
    "sad": words(
        "唉，心里空落落的。 我好想回到从前啊。 说好的一起走，怎么就散了呢？ 今天有点难过，"
        "不太想说话。 听到这首歌，眼泪一下子就掉下来了。 有些人，错过了就再也见不到了。"
    ),
    "angry": words(
        "你到底有完没完？ 我已经说了三遍了！ 这也太过分了吧！ 别再刷屏了，再刷就禁言！ "
        "凭什么让我来背锅？ 气死我了，简直不讲道理！"
    ),
    "surprised": words(
        "啊？真的假的？ 不会吧，这也行？ 天哪，你什么时候学会的？ 等一下，刚才发生了什么？ "
        "我的天，居然中奖了！ 这么快就到了？"
    ),
    "fearful": words(
        "你听，门外是不是有脚步声？ 别关灯，我有点害怕。 刚才镜子里好像有个人影。 "
        "我不敢一个人走夜路。 这地方阴森森的，咱们快走吧。 手机怎么突然没信号了？"
    ),
    "disgusted": words(
        "咦，这是什么味道啊？ 太恶心了，快拿走！ 这菜都馊了，谁还敢吃？ 地上黏糊糊的，"
        "真受不了。 垃圾桶三天没倒了吧？ 别把臭袜子扔在桌子上！"
    ),
}
ZH_SCENIC = words(
    "泰山 黄山 峨眉山 九寨沟 西湖 长城 故宫 兵马俑 布达拉宫 鼓浪屿 洱海 漓江 张家界 青海湖 天池 "
    "莫高窟 外滩 颐和园 天坛 黄鹤楼 滕王阁 岳阳楼 乌镇 周庄 凤凰古城 稻城亚丁 呼伦贝尔草原 "
    "武夷山 庐山 华山 嵩山 衡山 恒山 三峡 壶口瀑布 喀纳斯 西双版纳 平遥古城 宏村"
)
ZH_NATURE = words(
    "山峰 河流 湖泊 瀑布 森林 草原 沙漠 海浪 沙滩 悬崖 峡谷 溪水 池塘 田野 梯田 雪山 冰川 "
    "火山 岛屿 云海 彩虹 晚霞 朝阳 月光 星空 银河 流星 闪电 雷声 细雨 暴雨 大雪 浓雾 寒风 "
    "微风 露水 霜 冰雹 落叶 枫叶 松树 柳树 竹林 荷花 梅花 兰花 菊花 桂花 牡丹 茉莉 杜鹃 "
    "桃花 樱花 向日葵 薰衣草 银杏 芦苇 蒲公英 苔藓 藤蔓 蘑菇"
)
ZH_WEATHER = words(
    "下雨 下雪 刮风 打雷 起雾 出太阳 降温 升温 下冰雹 刮台风 有沙尘暴 进入梅雨季 雨夹雪 "
    "大风降温 阴转晴 多云 有雷阵雨"
)
ZH_ILLNESS = words(
    "感冒 发烧 咳嗽 头疼 牙疼 胃疼 过敏 失眠 拉肚子 嗓子疼 腰酸背痛 落枕 中暑 晕车 扭伤了脚 "
    "崴了脚 长了口腔溃疡 得了结膜炎 鼻塞 打喷嚏"
)
ZH_BODY = words(
    "头 手 脚 眼睛 耳朵 鼻子 嘴巴 肩膀 膝盖 腰 脖子 牙齿 胃 嗓子 腿 胳膊 手指 后背 皮肤 "
    "手腕 脚踝 额头 眉毛 睫毛 指甲 嘴唇"
)
ZH_SUBJECTS = words(
    "语文 数学 英语 物理 化学 生物 历史 地理 政治 美术 音乐 体育 编程 哲学 经济学 心理学 "
    "天文学 法律 医学 建筑学 统计学 社会学 考古学 营养学"
)
ZH_DISHES_MORE = words(
    "煲仔饭 腊肠 羊肉泡馍 胡辣汤 锅盔 驴打滚 炸酱面 卤煮 爆肚 豆汁 焦圈 烩面 桂林米粉 过桥米线 "
    "椰子鸡 蚵仔煎 龟苓膏 双皮奶 杨枝甘露 姜撞奶 糍粑 粢饭团 青团 韭菜盒子 葱油饼 酱香饼 "
    "烤冷面 鸭血粉丝汤 盐水鸭 桂花糕 蟹黄包 醪糟 冰粉 钵钵鸡 冒菜 串串 兔头 毛血旺 "
    "夫妻肺片 口水鸡 棒棒鸡 佛跳墙 松鼠鳜鱼 西湖醋鱼 叫花鸡 剁椒鱼头 蚝油生菜 干锅花菜 "
    "梅菜扣肉 啤酒鸭 大盘鸡 手抓饭 烤包子 馕 奶皮子 酥油茶 糌粑 抄手 凉拌黄瓜 皮蛋豆腐"
)
ZH_PROVERBS = words(
    "千里之行，始于足下。 三人行，必有我师。 一分耕耘，一分收获。 活到老，学到老。 "
    "好记性不如烂笔头。 磨刀不误砍柴工。 不经一事，不长一智。 书山有路勤为径。 "
    "少壮不努力，老大徒伤悲。 有志者事竟成。 失败是成功之母。 远亲不如近邻。 "
    "当局者迷，旁观者清。 路遥知马力，日久见人心。 早起的鸟儿有虫吃。 "
    "百闻不如一见。 冰冻三尺，非一日之寒。 一寸光阴一寸金。 吃一堑，长一智。 "
    "己所不欲，勿施于人。 读万卷书，行万里路。 三个臭皮匠，顶个诸葛亮。 "
    "车到山前必有路。 笑一笑，十年少。 饭后百步走，活到九十九。 瑞雪兆丰年。 "
    "近朱者赤，近墨者黑。 授人以鱼不如授人以渔。"
)
ZH_CHORES = words(
    "写作业 复习功课 开会 加班 出差 搬家 装修 买菜 收拾房间 洗衣服 打扫卫生 擦桌子 拖地 洗碗 叠被子 倒垃圾 晾衣服 换床单 浇花 喂猫 修水龙头 换灯泡 清理冰箱 "
    "整理衣柜 贴春联 挂窗帘 组装书架 给手机贴膜 缝扣子 熨衬衫 刷马桶 除螨 擦玻璃 "
    "疏通下水道 给自行车打气 腌咸菜 蒸馒头 炖排骨汤 剥毛豆 择韭菜 削苹果"
)
ZH_NICKNAMES_MORE = words(
    "云朵面包 橘子汽水 薄荷糖 枕头超软 不想上班 周末万岁 柚子茶 猫爪 蜗牛慢慢爬 碎碎念 "
    "醒醒吧 躺平青年 锦鲤附体 好运连连 彩虹糖 酸奶拌饭 桃桃乌龙 栗子 榛子 豌豆黄 煎蛋 "
    "吃瓜群众 熬夜修仙 秃头少女 暴富 发财树 梧桐 白桦林 鲸落 萤火 流萤 琥珀 翡翠 玛瑙"
)
ZH_THINGS_MORE = words(
    "把:剪刀 卷:胶带 个:订书机 把:梳子 支:牙刷 支:牙膏 块:香皂 瓶:洗发水 把:拖把 把:扫帚 "
    "个:簸箕 块:抹布 个:晾衣架 个:熨斗 个:吹风机 台:榨汁机 块:砧板 把:菜刀 个:砂锅 把:勺子 "
    "个:漏勺 个:蒸笼 张:凉席 床:被子 个:靠垫 盏:吊灯 个:插线板 个:闹铃 把:折叠椅 个:鱼缸 "
    "个:鸟笼 根:拐杖 副:老花镜 个:放大镜 个:望远镜 个:指南针 个:保险箱 个:存钱罐 个:沙漏 "
    "个:花瓶 个:烟灰缸 个:陀螺 个:魔方 副:象棋 副:扑克牌 把:口琴 个:哨子 个:铃铛 个:灯笼 "
    "幅:对联 张:年画 个:福字 串:鞭炮 个:红包 块:月饼 盒:茶叶 瓶:酱油 瓶:醋 袋:面粉 "
    "桶:食用油 袋:大米 颗:白菜 根:萝卜 个:南瓜 根:黄瓜 个:茄子 头:大蒜 块:生姜"
)
ZH_ORGS = words(
    "科技公司 律师事务所 出版社 物流公司 广告公司 外贸公司 设计院 研究所 医药公司 银行 "
    "游戏公司 电视台 报社 幼儿园 养老院 健身俱乐部 汽车厂 服装厂 动画工作室 咨询公司"
)
ZH_STATS = words(
    "旅游收入 粮食产量 快递量 新能源汽车销量 出生人口 空气质量优良天数 电影票房 "
    "外卖订单量 图书借阅量 地铁客流量 用电量 降水量 平均气温 就业人数 出口总额"
)
ZH_GIVEN_MORE = words(
    "嘉懿 煜祺 智宸 正豪 昊然 立诚 峻熙 弘文 熠彤 鸿煊 烨霖 哲瀚 鑫鹏 致远 俊驰 雨泽 烨磊 "
    "晟睿 文昊 修洁 黎昕 远航 旭尧 鸿涛 伟祺 荣轩 越泽 瑾瑜 皓轩 擎宇 睿渊 楷瑞 婉清 婧琪 "
    "婕妤 媛媛 娴静 芷若 沐阳 筱雅 梓萱 诗琪 馨予 沛珊 晗昱 璟雯 黛玉 翊君 铭泽 灏 淼 垚 "
    "鑫 焱 森 蕊 芮 珂 瑷 蔓 苒 霏 澜 溪 涵 岑 峥 嵘 骁 骏 驰 鹤 鸥 鹭"
)
ZH_SCENES = words(
    "窗外的梧桐叶沙沙作响 远处传来几声狗叫 街角的路灯忽明忽暗 锅里的汤咕嘟咕嘟冒着泡 "
    "屋檐下的雨滴滴答答 楼下的烧烤摊飘来一阵香味 操场上的孩子们追来追去 "
    "江面上的货船慢悠悠地开过 山谷里的雾气还没散 风把晾衣绳上的床单吹得鼓鼓的 "
    "桌上的台灯照着一摞试卷 广场舞的音乐准时响起 地铁里挤满了赶早班的人 "
    "树梢上挂着一轮弯弯的月亮 巷子口的老槐树开花了 壁炉里的木柴噼啪作响 "
    "荷塘里的青蛙呱呱地叫 窗台上的多肉晒着太阳 屋顶的积雪开始融化 "
    "海风卷着咸咸的味道扑面而来 集市上吆喝声此起彼伏 候机大厅里广播一遍遍地响 "
    "弹幕像瀑布一样刷过屏幕 键盘声噼里啪啦响个不停 厨房里飘出红烧肉的香味 "
    "猫趴在暖气片上打呼噜 楼道里的感应灯一闪一闪 田埂上的稻穗沉甸甸的"
)
